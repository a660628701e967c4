//! The local model's vectors in bf16 and int8 against f32, on a corpus of JSON lines with `title` and
//! `text` (SciFact's `corpus.jsonl`; each document embedded as `title\ntext`, as `cortex-bench eval`
//! stores it): the cosine between each document's two vectors, how many near-duplicate
//! decisions (cosine ≥ 0.85 between two documents) flip, and each precision's embedding rate
//! in wall and CPU time. BENCHMARKS.md, "Embedding precision".
//!
//! `cargo run --release --locked -p cortex-bench --example embed_precision -- <corpus.jsonl> [limit]`
//! with `CORTEX_MODEL_DIR` set.

// A measurement run from a terminal: its report is its output.
#![allow(clippy::print_stdout)]

use cortex_embed::{LocalModel, Precision, locate_model};
use std::time::Instant;

const THRESHOLD: f32 = 0.85;

fn cpu_seconds() -> f64 {
    // /proc/self/stat fields 14 and 15: user and system time of this process, in clock ticks
    // (100 per second on Linux).
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let corpus = args.get(1).expect("usage: embed_precision <corpus.jsonl> [limit]");
    let limit = args.get(2).and_then(|l| l.parse().ok()).unwrap_or(usize::MAX);
    let texts: Vec<String> = std::fs::read_to_string(corpus)
        .expect("corpus readable")
        .lines()
        .take(limit)
        .map(|line| {
            let doc: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
            let field = |name: &str| doc[name].as_str().unwrap_or("").to_string();
            format!("{}\n{}", field("title"), field("text"))
        })
        .collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let dir = locate_model(std::env::var_os("CORTEX_MODEL_DIR").map(Into::into)).dir;
    let mut vectors = Vec::new();
    let precisions = [Precision::F32, Precision::Bf16, Precision::Int8];
    for precision in precisions {
        let loading = Instant::now();
        let model = LocalModel::load_with(&dir, precision).expect("the model loads");
        let load_ms = loading.elapsed().as_secs_f64() * 1e3;
        let (started, cpu) = (Instant::now(), cpu_seconds());
        let mut out = Vec::with_capacity(refs.len());
        for batch in refs.chunks(100) {
            out.extend(model.embed(batch).expect("embedding works"));
        }
        let (wall, cpu) = (started.elapsed().as_secs_f64(), cpu_seconds() - cpu);
        println!(
            "{:>4}: load {load_ms:.1} ms (pack present); {} texts in {wall:.1} s wall = {:.1} texts/s, {cpu:.1} CPU-s = {:.1} texts per CPU-second",
            model.precision().name(),
            refs.len(),
            refs.len() as f64 / wall,
            refs.len() as f64 / cpu
        );
        vectors.push(out);
    }
    for (precision, other) in precisions.iter().zip(&vectors).skip(1) {
        compare(&vectors[0], other, &format!("{precision:?}"));
    }
}

/// How far `other`'s vectors are from f32's (`exact`), per document and per pair.
fn compare(exact: &[Vec<f32>], other: &[Vec<f32>], name: &str) {
    let mut cosines: Vec<f32> = exact.iter().zip(other).map(|(a, b)| dot(a, b)).collect();
    cosines.sort_by(f32::total_cmp);
    let mean = cosines.iter().map(|&c| c as f64).sum::<f64>() / cosines.len() as f64;
    println!(
        "cosine(f32, {name}) per document: min {:.6}, p1 {:.6}, median {:.6}, mean {mean:.6}",
        cosines[0],
        cosines[cosines.len() / 100],
        cosines[cosines.len() / 2]
    );
    let (mut near, mut flips, mut worst) = (0usize, 0usize, 0f32);
    for i in 0..exact.len() {
        for j in i + 1..exact.len() {
            let (e, b) = (dot(&exact[i], &exact[j]), dot(&other[i], &other[j]));
            if (e - THRESHOLD).abs() <= 0.05 {
                near += 1;
            }
            if (e >= THRESHOLD) != (b >= THRESHOLD) {
                flips += 1;
            }
            worst = worst.max((e - b).abs());
        }
    }
    println!(
        "{name} near-duplicate pairs (cosine ≥ {THRESHOLD}): {flips} of {} pairs flip; {near} pairs lie within 0.05 of the threshold in f32; largest pair cosine change {worst:.5}",
        exact.len() * (exact.len() - 1) / 2
    );
}
