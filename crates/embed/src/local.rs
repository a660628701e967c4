//! all-MiniLM-L6-v2 in-process: the tokenizer, then [`Encoder`] on every core.

use crate::bert::{CALIBRATION_TEXT, Config, Encoder, default_pack_dir};
use crate::model_files::check_files;
use crate::precision::{Precision, Resolved};
use crate::{EmbedError, InferenceFailure, LoadFailure};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokenizers::{Tokenizer, TruncationParams};

/// The model's own limit is 512 positions; 256 is what it was trained with, and longer
/// inputs only dilute the mean.
pub const MAX_TOKENS: usize = 256;

/// Tokens per forward pass, at most (a text longer than this goes alone). Large enough for
/// the matrix products to run at full speed, small enough that a batch of 100 short items
/// makes a dozen groups to share among the cores.
const GROUP_TOKENS: usize = 512;

pub struct LocalModel {
    encoder: Encoder,
    tokenizer: Tokenizer,
    /// Forward passes run at once; each runs on one thread.
    workers: usize,
}

fn read_config(dir: &Path) -> Result<Config, EmbedError> {
    std::fs::read_to_string(dir.join("config.json"))
        .map_err(|e| EmbedError::load(dir, e))
        .and_then(|text| serde_json::from_str(&text).map_err(|e| EmbedError::load(dir, e)))
}

/// Writes the packed model for `precision` (`auto`: this CPU's choice) of the model in `dir`
/// into the folder `packs`, so that loads map it instead of making it; returns its path.
pub fn pack_model(dir: &Path, packs: &Path, precision: Precision) -> Result<std::path::PathBuf, EmbedError> {
    check_files(dir)?;
    let config = read_config(dir)?;
    let tokenizer = read_tokenizer(dir, &config)?;
    Encoder::pack(&config, dir, packs, precision.resolve(), &|| calibration(&tokenizer))
        .map_err(|e| EmbedError::load(dir, e))
}

/// The model's tokenizer, without padding, truncating at [`MAX_TOKENS`], checked against its
/// configuration.
fn read_tokenizer(dir: &Path, config: &Config) -> Result<Tokenizer, EmbedError> {
    let mut tokenizer = Tokenizer::from_file(dir.join("tokenizer.json"))
        .map_err(|e| EmbedError::load(dir, LoadFailure::Tokenizer(e)))?;
    // The shipped tokenizer pads and truncates at 128: texts are not padded here (see
    // `bert`), and truncation is at MAX_TOKENS.
    tokenizer.with_padding(None);
    tokenizer
        .with_truncation(Some(TruncationParams { max_length: MAX_TOKENS, ..Default::default() }))
        .map_err(|e| EmbedError::load(dir, LoadFailure::Tokenizer(e)))?;
    if tokenizer.get_vocab_size(true) > config.vocab_size {
        let tokens = tokenizer.get_vocab_size(true);
        return Err(EmbedError::load(dir, LoadFailure::Vocabulary { tokens, vocab: config.vocab_size }));
    }
    Ok(tokenizer)
}

/// The token ids of the calibration text's lines ([`CALIBRATION_TEXT`]).
fn calibration(tokenizer: &Tokenizer) -> Vec<Vec<u32>> {
    CALIBRATION_TEXT
        .lines()
        .filter(|line| !line.trim().is_empty())
        .filter_map(|line| tokenizer.encode(line, true).ok())
        .map(|encoding| encoding.get_ids().to_vec())
        .filter(|ids| !ids.is_empty())
        .collect()
}

impl LocalModel {
    /// The model in `dir`, computing in this CPU's best precision (`auto`).
    pub fn load(dir: &Path) -> Result<LocalModel, EmbedError> {
        LocalModel::load_with(dir, Precision::Auto)
    }

    /// The model in `dir` in `precision`, its packed model kept in Cortex's cache folder.
    pub fn load_with(dir: &Path, precision: Precision) -> Result<LocalModel, EmbedError> {
        LocalModel::load_in(dir, &default_pack_dir(), precision)
    }

    /// The model in `dir` in `precision`, its packed model kept in the folder `packs`.
    pub fn load_in(dir: &Path, packs: &Path, precision: Precision) -> Result<LocalModel, EmbedError> {
        check_files(dir)?;
        let config = read_config(dir)?;
        let tokenizer = read_tokenizer(dir, &config)?;
        let encoder = Encoder::load(config, dir, packs, precision.resolve(), &|| calibration(&tokenizer))
            .map_err(|e| EmbedError::load(dir, e))?;
        if encoder.max_tokens() < MAX_TOKENS {
            return Err(EmbedError::load(dir, LoadFailure::Positions(encoder.max_tokens())));
        }
        let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
        Ok(LocalModel { encoder, tokenizer, workers })
    }

    /// The number format its matrix products run in.
    pub fn precision(&self) -> Resolved {
        self.encoder.precision()
    }

    /// The packed model it maps (`None`: made in memory, the cache folder was not writable).
    pub fn pack_path(&self) -> Option<&Path> {
        self.encoder.pack_path()
    }

    /// The vector of one short text (a query), on the calling thread.
    pub fn embed_one(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        let mut vectors = self.embed(&[text])?;
        vectors.pop().ok_or(EmbedError::Inference(InferenceFailure::NoVector))
    }

    /// One vector per text, in order. Groups of texts are shared among the cores.
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let encodings = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(|e| EmbedError::Inference(InferenceFailure::Tokenizer(e)))?;
        let ids: Vec<&[u32]> = encodings.iter().map(|e| e.get_ids()).collect();
        if let Some(i) = ids.iter().position(|t| t.is_empty()) {
            return Err(EmbedError::Inference(InferenceFailure::NoTokens(i)));
        }
        let groups = groups(&ids);
        let next = AtomicUsize::new(0);
        let work = || {
            let mut done = Vec::new();
            loop {
                let g = next.fetch_add(1, Ordering::Relaxed);
                let Some(range) = groups.get(g) else { return done };
                done.push((range.start, self.encoder.encode(&ids[range.clone()])));
            }
        };
        let workers = self.workers.min(groups.len()).max(1);
        let mut results: Vec<(usize, Vec<Vec<f32>>)> = std::thread::scope(|scope| {
            let helpers: Vec<_> = (1..workers).map(|_| scope.spawn(work)).collect();
            let mut all = work();
            for helper in helpers {
                match helper.join() {
                    Ok(done) => all.extend(done),
                    Err(_) => return Err(EmbedError::Inference(InferenceFailure::WorkerPanicked)),
                }
            }
            Ok(all)
        })?;
        results.sort_by_key(|(start, _)| *start);
        Ok(results.into_iter().flat_map(|(_, vectors)| vectors).collect())
    }
}

/// Consecutive runs of texts with at most GROUP_TOKENS tokens together (or one longer text).
fn groups(texts: &[&[u32]]) -> Vec<std::ops::Range<usize>> {
    let mut groups = Vec::new();
    let (mut start, mut tokens) = (0, 0);
    for (i, text) in texts.iter().enumerate() {
        if i > start && tokens + text.len() > GROUP_TOKENS {
            groups.push(start..i);
            (start, tokens) = (i, 0);
        }
        tokens += text.len();
    }
    if start < texts.len() {
        groups.push(start..texts.len());
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_cover_every_text_once_in_order_within_the_token_budget() {
        let lengths = [300, 200, 100, 600, 5, 5, 500, 12];
        let texts: Vec<Vec<u32>> = lengths.iter().map(|&n| vec![1; n]).collect();
        let refs: Vec<&[u32]> = texts.iter().map(Vec::as_slice).collect();
        let groups = groups(&refs);
        assert_eq!(groups, vec![0..2, 2..3, 3..4, 4..7, 7..8]);
        for g in &groups {
            let tokens: usize = lengths[g.clone()].iter().sum();
            assert!(g.len() == 1 || tokens <= GROUP_TOKENS, "{g:?} has {tokens} tokens");
        }
        assert!(super::groups(&[]).is_empty());
    }
}
