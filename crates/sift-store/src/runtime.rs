//! The I/O runtime: object-store requests are futures, and Sift's scans are synchronous
//! code on their own threads. Requests run on one small Tokio runtime owned by this crate;
//! a scan thread hands them over and waits. Waiting does not need a Tokio context, so it
//! works from any thread, including the worker threads of another runtime (DataFusion's).

use std::future::Future;
use std::sync::OnceLock;

/// Threads of the I/O runtime: requests mostly wait on the network.
const IO_THREADS: usize = 2;

fn runtime() -> std::io::Result<&'static tokio::runtime::Runtime> {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    if let Some(rt) = RUNTIME.get() {
        return Ok(rt);
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(IO_THREADS)
        .thread_name("sift-io")
        .enable_all()
        .build()?;
    Ok(RUNTIME.get_or_init(|| rt))
}

/// Runs `future` on the I/O runtime (where object-store clients do their work) and waits
/// for its output, from any thread.
pub fn block_on<T: Send + 'static>(
    future: impl Future<Output = T> + Send + 'static,
) -> std::io::Result<T> {
    let handle = runtime()?.spawn(future);
    futures::executor::block_on(handle).map_err(std::io::Error::other)
}
