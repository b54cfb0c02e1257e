//! One object read by byte range: the [`RangeSource`] behind a Sift file in an object
//! store. Requests run on the I/O runtime, at most `max_in_flight` at once.

use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path as ObjectPath;
use object_store::{GetOptions, GetRange, ObjectStore, ObjectStoreExt};
use sift_format::RangeSource;

use crate::error::to_io;
use crate::runtime::block_on;

/// An object in a store, read by range.
#[derive(Debug, Clone)]
pub struct ObjectFile {
    store: Arc<dyn ObjectStore>,
    path: ObjectPath,
    location: String,
    max_in_flight: usize,
}

impl ObjectFile {
    /// The object at `path` in `store`; `location` names it in messages.
    pub fn new(
        store: Arc<dyn ObjectStore>,
        path: ObjectPath,
        location: String,
        max_in_flight: usize,
    ) -> Self {
        Self {
            store,
            path,
            location,
            max_in_flight: max_in_flight.max(1),
        }
    }
}

impl RangeSource for ObjectFile {
    fn location(&self) -> &str {
        &self.location
    }

    fn read_suffix(&self, n: u64) -> std::io::Result<(Bytes, u64)> {
        let (store, path) = (Arc::clone(&self.store), self.path.clone());
        block_on(async move {
            let options = GetOptions {
                range: Some(GetRange::Suffix(n)),
                ..Default::default()
            };
            let got = store.get_opts(&path, options).await.map_err(to_io)?;
            let size = got.meta.size;
            let bytes = got.bytes().await.map_err(to_io)?;
            Ok((bytes, size))
        })?
    }

    fn read_ranges(&self, ranges: &[Range<u64>]) -> std::io::Result<Vec<Bytes>> {
        let (store, path) = (Arc::clone(&self.store), self.path.clone());
        let ranges = ranges.to_vec();
        let in_flight = self.max_in_flight;
        block_on(async move {
            futures::stream::iter(ranges)
                .map(|r| {
                    let (store, path) = (Arc::clone(&store), path.clone());
                    async move { store.get_range(&path, r).await }
                })
                .buffered(in_flight)
                .try_collect::<Vec<Bytes>>()
                .await
                .map_err(to_io)
        })?
    }
}
