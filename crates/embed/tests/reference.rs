//! The local embedder against an independent reference: BERT written in numpy from the same
//! safetensors file (`fixtures/minilm_reference.py`). `scripts/test` fetches the model and sets
//! `CORTEX_MODEL_DIR`; without the model this test fails rather than skip.

use cortex_embed::{Embedder, LocalModel, MINILM_DIMENSION, Precision, locate_model};
use serde_json::Value;

fn model() -> Embedder {
    model_in(Precision::Auto)
}

fn model_in(precision: Precision) -> Embedder {
    let location = locate_model(std::env::var_os("CORTEX_MODEL_DIR").map(Into::into));
    match LocalModel::load_with(&location.dir, precision) {
        Ok(m) => Embedder::Local(Box::new(m)),
        Err(e) => panic!("{e} (scripts/test installs the model; see README)"),
    }
}

fn cosine(a: &[f32], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| *x as f64 * y).sum::<f64>()
        / (a.iter().map(|x| (*x as f64).powi(2)).sum::<f64>().sqrt()
            * b.iter().map(|y| y * y).sum::<f64>().sqrt())
}

/// f32 is the reference's own arithmetic: equal to rounding. bf16 rounds every matrix
/// product's operands to 8 bits of mantissa; over six layers that moves a vector by about
/// 1e-3 in cosine (BENCHMARKS.md measures it over SciFact), bounded here at 0.998.
#[test]
fn vectors_match_the_independent_reference_alone_and_in_a_padded_batch() {
    for (precision, bound) in [(Precision::F32, 0.9999), (Precision::Bf16, 0.998)] {
        matches_the_reference(precision, bound);
    }
}

fn matches_the_reference(precision: Precision, bound: f64) {
    let fixture: Value = serde_json::from_str(include_str!("fixtures/minilm_reference.json")).unwrap();
    let sentences: Vec<&str> =
        fixture["sentences"].as_array().unwrap().iter().map(|s| s.as_str().unwrap()).collect();
    let reference: Vec<Vec<f64>> = fixture["vectors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect())
        .collect();
    let embedder = model_in(precision);
    // One batch mixes lengths, so padding and the attention mask are exercised.
    let batch = embedder.embed(&sentences).unwrap();
    for (i, (got, want)) in batch.iter().zip(&reference).enumerate() {
        assert_eq!(got.len(), MINILM_DIMENSION);
        let c = cosine(got, want);
        assert!(c >= bound, "{precision:?} sentence {i} {:?}: cosine {c}", sentences[i]);
        let norm: f32 = got.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "unit length, got {norm}");
    }
    let alone = embedder.embed(&sentences[..1]).unwrap();
    assert!(cosine(&alone[0], &reference[0]) >= bound);
}

#[test]
fn paraphrases_are_closer_than_unrelated_text() {
    let embedder = model();
    let v = embedder
        .embed(&[
            "We moved user sessions from Redis to Postgres.",
            "Sessions now live in PostgreSQL instead of Redis.",
            "The cat sat on the mat.",
        ])
        .unwrap();
    let dot = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>();
    assert!(dot(&v[0], &v[1]) > 0.8, "{}", dot(&v[0], &v[1]));
    assert!(dot(&v[0], &v[2]) < 0.3, "{}", dot(&v[0], &v[2]));
}

#[test]
fn a_missing_model_is_a_clear_error_not_a_crash() {
    let dir = std::env::temp_dir().join("cortex-no-model-here");
    let err = LocalModel::load(&dir).err().expect("loading from an empty folder fails");
    let text = err.to_string();
    assert!(text.contains("model.safetensors") && text.contains("cortex model install"), "{text}");
}

#[test]
fn install_copies_the_files_from_a_folder_and_the_result_loads() {
    let source = locate_model(std::env::var_os("CORTEX_MODEL_DIR").map(Into::into)).dir;
    let target = tempfile::tempdir().unwrap();
    let installed = cortex_embed::install_model(&source, target.path()).unwrap();
    assert_eq!(installed.len(), 4, "the three files and the packed weights: {installed:?}");
    assert!(installed[3].file_name().unwrap().to_string_lossy().ends_with(".pack"));
    assert!(LocalModel::load(target.path()).is_ok());
    let empty = tempfile::tempdir().unwrap();
    let err = cortex_embed::install_model(empty.path(), target.path()).unwrap_err();
    assert!(err.to_string().contains("model.safetensors"), "{err}");
}

#[test]
fn a_large_batch_spread_over_threads_gives_each_text_its_own_vector_in_order() {
    // Enough text for many groups of the encoder (so several threads), of varied lengths,
    // with a long one (truncated at 256 tokens) among them.
    let long = "The ledger migration replays every posting through the new schema. ".repeat(60);
    let texts: Vec<String> = (0..48)
        .map(|i| match i {
            17 => long.clone(),
            _ => format!(
                "Item {i}: {}",
                "we tuned the billing retry backoff after an incident. ".repeat(1 + i % 5)
            ),
        })
        .collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let embedder = model();
    let batch = embedder.embed(&refs).unwrap();
    assert_eq!(batch.len(), texts.len());
    for (i, text) in refs.iter().enumerate() {
        let alone = embedder.embed(&[text]).unwrap().remove(0);
        let c: f32 = alone.iter().zip(&batch[i]).map(|(a, b)| a * b).sum();
        assert!(c > 0.99999, "text {i}: cosine {c} between its vector alone and in the batch");
    }
}

#[test]
fn the_packed_weights_are_made_once_and_made_again_when_the_model_file_changes() {
    let source = locate_model(std::env::var_os("CORTEX_MODEL_DIR").map(Into::into)).dir;
    let dir = tempfile::tempdir().unwrap();
    cortex_embed::install_model(&source, dir.path()).unwrap();
    let pack = dir.path().join(format!("cortex-{}.pack", Precision::Auto.resolve().name()));
    let made = std::fs::metadata(&pack).unwrap().modified().unwrap();
    let text = ["sessions moved from Redis to Postgres"];
    let first = LocalModel::load(dir.path()).unwrap().embed(&text).unwrap();
    assert_eq!(std::fs::metadata(&pack).unwrap().modified().unwrap(), made, "a fresh pack is reused");

    // The same model written again is another file as far as the pack knows: it is remade.
    let weights = dir.path().join("model.safetensors");
    std::fs::write(&weights, std::fs::read(&weights).unwrap()).unwrap();
    let again = LocalModel::load(dir.path()).unwrap().embed(&text).unwrap();
    assert_ne!(std::fs::metadata(&pack).unwrap().modified().unwrap(), made, "a stale pack is remade");
    assert_eq!(first, again);

    // Another precision's pack is made on first use beside it; the f32 one gives the
    // reference's vectors, which the bf16 ones approach.
    let f32 = LocalModel::load_with(dir.path(), Precision::F32).unwrap();
    assert!(dir.path().join("cortex-f32.pack").is_file());
    let exact = f32.embed(&text).unwrap();
    let c: f32 = exact[0].iter().zip(&first[0]).map(|(a, b)| a * b).sum();
    assert!(c > 0.998, "cosine {c} between the f32 vector and the auto one");
}
