//! How the process's allocator keeps freed memory.
//!
//! Each catch-up of the lexical index (`cortex_lexical`) writes a new tantivy segment, whose
//! writer allocates a few megabytes of hash table and arena and frees them at the commit.
//! glibc hands large freed blocks back to the kernel, so the next commit faulted in and zeroed
//! fresh pages: two thirds of a 17 ms commit of five items (perf, 100k-item index). A server
//! taking a store every few finds paid that on the find path. Keeping blocks up to 32 MiB in
//! the heap, and up to 64 MiB of free heap before trimming it, brought the commit to 6–7 ms.
//! Larger blocks (an index build's arenas) are still mapped and returned as before.

/// Blocks up to this size come from the heap and are reused after being freed.
const MMAP_THRESHOLD: i32 = 32 << 20;
/// Free memory at the top of the heap beyond this is returned to the kernel.
const TRIM_THRESHOLD: i32 = 64 << 20;

/// Sets the thresholds above; called first thing in `main`, before any thread starts.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
pub fn keep_freed_blocks_for_reuse() {
    // SAFETY: `mallopt` only sets two of glibc's allocator parameters; no other thread exists
    // yet, and a refused value (returns 0) leaves the defaults, which are also correct.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD);
        libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD);
    }
}

/// Other allocators keep their defaults.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn keep_freed_blocks_for_reuse() {}
