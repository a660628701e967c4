//! An OpenAI-compatible `/v1/embeddings` endpoint: OpenAI itself, or a local server (Ollama,
//! vLLM, TEI, LM Studio). Texts go in batches; vectors come back in input order (by `index`),
//! L2-normalized here whatever the server does, so cosine is a dot product downstream.

use crate::EmbedError;
use serde::Deserialize;
use std::sync::OnceLock;
use std::time::Duration;

/// Texts per request: servers cap batch sizes (OpenAI at 2,048 inputs); small batches also
/// keep one slow request short.
const BATCH: usize = 64;
const TIMEOUT: Duration = Duration::from_secs(60);

/// Where and what to ask.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenAiConfig {
    /// Up to and including `/v1`, e.g. `http://localhost:11434/v1` or `https://api.openai.com/v1`.
    pub base_url: String,
    pub model: String,
    /// The bearer token, read from the environment variable the user named.
    pub api_key: Option<String>,
}

pub struct OpenAiEmbedder {
    config: OpenAiConfig,
    agent: ureq::Agent,
    /// Learned from the first answer: the server decides the dimension of its model.
    dimension: OnceLock<usize>,
}

#[derive(Deserialize)]
struct Response {
    data: Vec<Datum>,
}

#[derive(Deserialize)]
struct Datum {
    index: usize,
    embedding: Vec<f32>,
}

impl OpenAiEmbedder {
    pub fn new(config: OpenAiConfig) -> OpenAiEmbedder {
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(TIMEOUT))
            .http_status_as_error(false)
            .build()
            .new_agent();
        OpenAiEmbedder { config, agent, dimension: OnceLock::new() }
    }

    pub fn model(&self) -> &str {
        &self.config.model
    }

    /// The model's dimension, asking the server once if no answer was seen yet.
    pub fn dimension(&self) -> Result<usize, EmbedError> {
        if let Some(d) = self.dimension.get() {
            return Ok(*d);
        }
        self.embed(&["dimension probe"])?;
        self.dimension.get().copied().ok_or_else(|| self.error("the server returned no embedding"))
    }

    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut out = Vec::with_capacity(texts.len());
        for batch in texts.chunks(BATCH) {
            out.extend(self.embed_batch(batch)?);
        }
        Ok(out)
    }

    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let url = format!("{}/embeddings", self.config.base_url.trim_end_matches('/'));
        let mut request = self.agent.post(&url);
        if let Some(key) = &self.config.api_key {
            request = request.header("Authorization", &format!("Bearer {key}"));
        }
        let body = serde_json::json!({ "model": self.config.model, "input": texts });
        let mut response =
            request.send_json(&body).map_err(|e| self.error(&format!("cannot reach {url}: {e}")))?;
        let status = response.status();
        if !status.is_success() {
            let text = response.body_mut().read_to_string().unwrap_or_default();
            let text: String = text.chars().take(300).collect();
            return Err(self.error(&format!("{url} answered {status}: {text}")));
        }
        let parsed: Response = response.body_mut().read_json().map_err(|e| {
            self.error(&format!("{url} answered something that is not an embeddings response: {e}"))
        })?;
        let mut vectors: Vec<Option<Vec<f32>>> = vec![None; texts.len()];
        for datum in parsed.data {
            if let Some(slot) = vectors.get_mut(datum.index) {
                *slot = Some(normalized(datum.embedding));
            }
        }
        let vectors: Vec<Vec<f32>> = vectors
            .into_iter()
            .collect::<Option<_>>()
            .ok_or_else(|| self.error(&format!("{url} returned fewer embeddings than texts sent")))?;
        let dimension = *self.dimension.get_or_init(|| vectors.first().map_or(0, Vec::len));
        if vectors.iter().any(|v| v.len() != dimension || v.is_empty()) {
            return Err(self.error(&format!("{url} returned embeddings of varying or zero length")));
        }
        Ok(vectors)
    }

    fn error(&self, detail: &str) -> EmbedError {
        EmbedError::Remote { model: self.config.model.clone(), detail: detail.to_string() }
    }
}

fn normalized(mut v: Vec<f32>) -> Vec<f32> {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
    v
}
