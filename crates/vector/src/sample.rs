//! Deterministic pseudo-random unit vectors, for tests and benchmarks that need many vectors
//! without running a model.

/// Unit vectors of `dimension` values, the same sequence for the same `seed` (xorshift).
pub struct UnitVectors {
    state: u64,
    dimension: usize,
}

impl UnitVectors {
    pub fn new(seed: u64, dimension: usize) -> UnitVectors {
        UnitVectors { state: seed.max(1), dimension }
    }
}

impl Iterator for UnitVectors {
    type Item = Vec<f32>;

    fn next(&mut self) -> Option<Vec<f32>> {
        let raw: Vec<f32> = (0..self.dimension)
            .map(|_| {
                self.state ^= self.state << 13;
                self.state ^= self.state >> 7;
                self.state ^= self.state << 17;
                (self.state % 2000) as f32 / 1000.0 - 1.0
            })
            .collect();
        let norm = raw.iter().map(|x| x * x).sum::<f32>().sqrt().max(f32::MIN_POSITIVE);
        Some(raw.into_iter().map(|x| x / norm).collect())
    }
}
