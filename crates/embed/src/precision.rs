//! `CORTEX_EMBED_PRECISION`: the number format of the encoder's matrix products.

use crate::bert::{has_bf16_kernel, has_int8_kernel};

/// What the user asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Precision {
    /// int8 where the CPU has AVX-512 VNNI, else bf16 where it has AVX-512 BF16, else f32:
    /// the fastest format this CPU has a kernel for. On held-out sets int8 ranks as f32 does
    /// (BENCHMARKS.md).
    #[default]
    Auto,
    /// f32 throughout: the reference, and the fallback everywhere.
    F32,
    /// Weights and activations rounded to bf16 in the matrix products, sums in f32. On a CPU
    /// without AVX-512 BF16 this runs a scalar kernel, correct but several times slower than f32.
    Bf16,
    /// Weights quantized to int8 per output column, activations to u8 per row, sums in i32.
    /// On a CPU without AVX-512 VNNI this runs a scalar kernel, correct but slower than f32.
    Int8,
}

/// The format a loaded model computes in: [`Precision`] with `auto` decided for this CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolved {
    F32,
    Bf16,
    Int8,
}

/// The values `CORTEX_EMBED_PRECISION` accepts, for messages and docs.
pub const PRECISION_VALUES: &str = "auto, f32, bf16 or int8";

impl Precision {
    /// Parses a setting's value (case-insensitive); `None` for anything else.
    pub fn parse(value: &str) -> Option<Precision> {
        match value.trim().to_ascii_lowercase().as_str() {
            "auto" => Some(Precision::Auto),
            "f32" => Some(Precision::F32),
            "bf16" => Some(Precision::Bf16),
            "int8" => Some(Precision::Int8),
            _ => None,
        }
    }

    /// The setting's value that names it.
    pub fn name(self) -> &'static str {
        match self {
            Precision::Auto => "auto",
            Precision::F32 => "f32",
            Precision::Bf16 => "bf16",
            Precision::Int8 => "int8",
        }
    }

    pub fn resolve(self) -> Resolved {
        match self {
            Precision::F32 => Resolved::F32,
            Precision::Bf16 => Resolved::Bf16,
            Precision::Int8 => Resolved::Int8,
            Precision::Auto if has_int8_kernel() => Resolved::Int8,
            Precision::Auto if has_bf16_kernel() => Resolved::Bf16,
            Precision::Auto => Resolved::F32,
        }
    }
}

impl Resolved {
    pub fn name(self) -> &'static str {
        match self {
            Resolved::F32 => "f32",
            Resolved::Bf16 => "bf16",
            Resolved::Int8 => "int8",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_documented_value_parses_and_others_do_not() {
        assert_eq!(Precision::parse(" BF16 "), Some(Precision::Bf16));
        assert_eq!(Precision::parse("f32"), Some(Precision::F32));
        assert_eq!(Precision::parse("auto"), Some(Precision::Auto));
        assert_eq!(Precision::parse("Int8"), Some(Precision::Int8));
        assert_eq!(Precision::parse("int4"), None);
        assert_eq!(Precision::parse("fp16"), None);
        assert_eq!(Precision::F32.resolve(), Resolved::F32);
        assert_eq!(Precision::Int8.resolve(), Resolved::Int8);
        let auto = Precision::Auto.resolve();
        assert_eq!(
            auto == Resolved::Int8,
            has_int8_kernel(),
            "auto takes int8 exactly when the CPU has VNNI"
        );
        assert_eq!(
            auto == Resolved::Bf16,
            !has_int8_kernel() && has_bf16_kernel(),
            "else bf16 exactly when the CPU has it"
        );
    }
}
