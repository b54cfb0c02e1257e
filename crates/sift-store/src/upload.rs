//! Writing to object stores: a finished local file is uploaded with a multipart upload,
//! which the store makes visible only when it completes, so readers see the whole object
//! or none. A failed upload is aborted, leaving nothing behind.

use std::io::Read;

use object_store::{ObjectStoreExt, WriteMultipart};
use url::Url;

use crate::error::{StoreError, invalid, io_err, store_err};
use crate::runtime::block_on;
use crate::store::{StoreOptions, store_for};

/// Part size of multipart uploads (S3 needs at least 5 MiB per part but the last).
const PART_SIZE: usize = 8 << 20;

/// Uploads the local file `from` to the object at URL `to`; returns the bytes uploaded.
pub fn upload(from: &std::path::Path, to: &str, options: &StoreOptions) -> Result<u64, StoreError> {
    let url = Url::parse(to).map_err(|e| invalid(to, format!("bad URL: {e}")))?;
    let (store, path) = store_for(&url, options)?;
    let mut file = std::fs::File::open(from).map_err(io_err(to))?;
    let location = to.to_string();
    // The file is read on this thread, a part at a time, and each part handed to the
    // upload, which sends up to a few parts concurrently.
    block_on(async move {
        let upload = store
            .put_multipart(&path)
            .await
            .map_err(store_err(&location))?;
        let mut writer = WriteMultipart::new_with_chunk_size(upload, PART_SIZE);
        let mut total = 0u64;
        let mut buf = vec![0u8; PART_SIZE];
        loop {
            let n = match file.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) => {
                    let _ = writer.abort().await;
                    return Err(io_err(&location)(e));
                }
            };
            if let Err(e) = writer.wait_for_capacity(4).await {
                return Err(store_err(&location)(e));
            }
            writer.write(&buf[..n]);
            total += n as u64;
        }
        writer.finish().await.map_err(store_err(&location))?;
        Ok(total)
    })
    .map_err(io_err(to))?
}
