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
    match LocalModel::load_in(&location.dir, &packs(), precision) {
        Ok(m) => Embedder::Local(Box::new(m)),
        Err(e) => panic!("{e} (scripts/test installs the model; see README)"),
    }
}

/// The packs these tests make, kept between runs in the build's folder (not the user's cache).
fn packs() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("cortex-packs")
}

fn cosine(a: &[f32], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| *x as f64 * y).sum::<f64>()
        / (a.iter().map(|x| (*x as f64).powi(2)).sum::<f64>().sqrt()
            * b.iter().map(|y| y * y).sum::<f64>().sqrt())
}

/// f32 is the reference's own arithmetic: equal to rounding. bf16 rounds every matrix
/// product's operands to 8 bits of mantissa, int8 to 256 steps per row and 255 per weight
/// column; over six layers that moves a vector by about 1e-3 in cosine (BENCHMARKS.md
/// measures it over SciFact), bounded here at 0.998 and 0.99.
#[test]
fn vectors_match_the_independent_reference_alone_and_in_a_padded_batch() {
    for (precision, bound) in [(Precision::F32, 0.9999), (Precision::Bf16, 0.998), (Precision::Int8, 0.99)] {
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
    let (target, packs) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let installed = cortex_embed::install_model(&source, target.path(), packs.path()).unwrap();
    assert_eq!(installed.len(), 4, "the three files and the packed weights: {installed:?}");
    assert!(installed[3].starts_with(packs.path()) && installed[3].extension().unwrap() == "pack");
    let model = LocalModel::load_in(target.path(), packs.path(), Precision::Auto).unwrap();
    assert_eq!(model.pack_path(), Some(installed[3].as_path()), "the installed pack is the one mapped");
    let empty = tempfile::tempdir().unwrap();
    let err = cortex_embed::install_model(empty.path(), target.path(), packs.path()).unwrap_err();
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

fn modified(path: &std::path::Path) -> std::time::SystemTime {
    std::fs::metadata(path).unwrap().modified().unwrap()
}

fn names_in(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into()).collect();
    names.sort();
    names
}

#[test]
fn the_pack_is_made_once_in_the_cache_and_the_model_folder_is_left_as_it_was() {
    let source = locate_model(std::env::var_os("CORTEX_MODEL_DIR").map(Into::into)).dir;
    let (dir, packs) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    for file in cortex_embed::MODEL_FILES {
        std::fs::copy(source.join(file), dir.path().join(file)).unwrap();
    }
    let text = ["sessions moved from Redis to Postgres"];
    let model = LocalModel::load_in(dir.path(), packs.path(), Precision::Int8).unwrap();
    let pack = model.pack_path().expect("written to the cache").to_path_buf();
    assert!(pack.starts_with(packs.path()) && pack.to_string_lossy().ends_with("-int8.pack"), "{pack:?}");
    let first = model.embed(&text).unwrap();
    let made = modified(&pack);
    let mut model_files: Vec<String> = cortex_embed::MODEL_FILES.iter().map(|f| f.to_string()).collect();
    model_files.sort();
    assert_eq!(names_in(dir.path()), model_files);

    let again = LocalModel::load_in(dir.path(), packs.path(), Precision::Int8).unwrap();
    assert_eq!(again.pack_path(), Some(pack.as_path()));
    assert_eq!(modified(&pack), made, "a whole pack is reused, not rewritten");
    assert_eq!(again.embed(&text).unwrap(), first);

    // The same model in another folder (say, the pip package's and an installed copy) shares it.
    let copy = tempfile::tempdir().unwrap();
    for file in cortex_embed::MODEL_FILES {
        std::fs::copy(dir.path().join(file), copy.path().join(file)).unwrap();
    }
    let shared = LocalModel::load_in(copy.path(), packs.path(), Precision::Int8).unwrap();
    assert_eq!((shared.pack_path(), modified(&pack)), (Some(pack.as_path()), made));
    assert_eq!(names_in(dir.path()), model_files, "nothing written beside the model");
}

#[test]
fn a_corrupt_or_truncated_pack_is_made_again_not_trusted() {
    let source = locate_model(std::env::var_os("CORTEX_MODEL_DIR").map(Into::into)).dir;
    let packs = tempfile::tempdir().unwrap();
    let text = ["the billing retry backoff was tuned after the incident"];
    let model = LocalModel::load_in(&source, packs.path(), Precision::Bf16).unwrap();
    let want = model.embed(&text).unwrap();
    let pack = model.pack_path().unwrap().to_path_buf();
    let whole = std::fs::read(&pack).unwrap();
    drop(model);

    let mut garbled = whole.clone();
    garbled[20..60].fill(b'#');
    let truncated = whole[..whole.len() / 2].to_vec();
    for (case, bytes) in [("a garbled header", garbled), ("half the file", truncated), ("empty", Vec::new())]
    {
        std::fs::write(&pack, &bytes).unwrap();
        let model = LocalModel::load_in(&source, packs.path(), Precision::Bf16).unwrap();
        assert_eq!(model.embed(&text).unwrap(), want, "{case}: the vectors of a whole pack");
        assert_eq!(std::fs::read(&pack).unwrap(), whole, "{case}: the pack is made again");
    }
}

#[test]
fn int8_and_bf16_vectors_stay_close_to_f32_on_real_text() {
    let texts = [
        "We moved user sessions from Redis to Postgres to drop a moving part.",
        "Decision: the billing service retries with exponential backoff capped at 30 seconds.",
        "Incident 2024-03: the nightly export filled the disk; alerts now fire at 80 percent.",
        "The cat sat on the mat.",
    ];
    let vectors = |p| model_in(p).embed(&texts).unwrap();
    let (exact, bf16, int8) = (vectors(Precision::F32), vectors(Precision::Bf16), vectors(Precision::Int8));
    let dot = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>();
    for i in 0..texts.len() {
        assert!(dot(&exact[i], &bf16[i]) > 0.999, "bf16 text {i}: {}", dot(&exact[i], &bf16[i]));
        assert!(dot(&exact[i], &int8[i]) > 0.99, "int8 text {i}: {}", dot(&exact[i], &int8[i]));
    }
}
