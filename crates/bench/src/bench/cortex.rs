//! The `cortex` binary the benchmarks drive as a user runs it (`serve`, `reindex`, `keys`,
//! `recall`): the one `CORTEX_BIN` names, else the one beside `cortex-bench` — cargo builds
//! both into the same folder (`target/release/`, `target/debug/`).

use std::path::PathBuf;

pub(super) fn exe() -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os("CORTEX_BIN").filter(|p| !p.is_empty()) {
        let path = PathBuf::from(path);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(format!(
                "CORTEX_BIN={} is not a file: name a built cortex binary, or unset it to use the one beside cortex-bench",
                path.display()
            ))
        };
    }
    let here =
        std::env::current_exe().map_err(|e| format!("cannot tell where cortex-bench runs from: {e}"))?;
    let beside = here.with_file_name(format!("cortex{}", std::env::consts::EXE_SUFFIX));
    if beside.is_file() {
        Ok(beside)
    } else {
        Err(format!(
            "no cortex binary beside {}: `cargo build --release` builds both (or set CORTEX_BIN to one)",
            here.display()
        ))
    }
}
