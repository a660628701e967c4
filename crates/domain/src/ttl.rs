//! Time-to-live policies an item may carry.

use crate::error::{ErrorCode, ValidationError};
use crate::time::MILLIS_PER_DAY;
use serde_json::Value;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TtlPolicy {
    Short,
    Default,
    Long,
    Permanent,
}

impl crate::args::Word for TtlPolicy {
    const ALL: &'static [TtlPolicy] =
        &[TtlPolicy::Short, TtlPolicy::Default, TtlPolicy::Long, TtlPolicy::Permanent];

    fn as_str(self) -> &'static str {
        TtlPolicy::as_str(self)
    }
}

impl TtlPolicy {
    pub fn from_json(value: &Value) -> Result<TtlPolicy, ValidationError> {
        let hint = "use one of: short (30 days), default (90 days), long (365 days), permanent";
        let Value::String(text) = value else {
            return Err(ValidationError::new(ErrorCode::WrongType, "ttl", "`ttl` must be a string", hint));
        };
        match text.trim().to_ascii_lowercase().as_str() {
            "short" => Ok(TtlPolicy::Short),
            "default" => Ok(TtlPolicy::Default),
            "long" => Ok(TtlPolicy::Long),
            "permanent" => Ok(TtlPolicy::Permanent),
            other => Err(ValidationError::new(
                ErrorCode::InvalidValue,
                "ttl",
                format!("`{}` is not a ttl policy", crate::error::shown(other)),
                hint,
            )),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            TtlPolicy::Short => "short",
            TtlPolicy::Default => "default",
            TtlPolicy::Long => "long",
            TtlPolicy::Permanent => "permanent",
        }
    }

    /// When an item written at `now` (epoch ms) expires; `None` never.
    pub fn expires_at(self, now: i64) -> Option<i64> {
        let days = match self {
            TtlPolicy::Short => 30,
            TtlPolicy::Default => 90,
            TtlPolicy::Long => 365,
            TtlPolicy::Permanent => return None,
        };
        Some(now + days * MILLIS_PER_DAY)
    }
}
