//! Datasets: the files a location names, local or in an object store.
//!
//! A location is a file, a directory (every `.sift` file under it, or every `.parquet`
//! file when it holds no `.sift` file), or a glob (`lineitem/*.sift`,
//! `s3://bucket/t/year=*/…`). Directories are listed recursively, and a directory named
//! `key=value` on the way from the dataset's root to a file is a Hive partition: the file's
//! rows have that value in column `key`. Files and directories whose names start with `_`
//! or `.` (`_SUCCESS`, `_temporary/`, `.part-…`) are not part of the dataset.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::TryStreamExt;
use object_store::ObjectStore;
use object_store::path::Path as ObjectPath;
use sift_scan::{Dataset, DatasetFile, Table};
use url::Url;

use crate::error::{StoreError, invalid, io_err, store_err};
use crate::object::ObjectFile;
use crate::runtime::block_on;
use crate::store::{StoreOptions, is_url, store_for};

/// File extensions read as Sift files.
pub const SIFT_EXTENSIONS: &[&str] = &["sift"];
/// File extensions read as Parquet files (through Sift's engine).
pub const PARQUET_EXTENSIONS: &[&str] = &["parquet", "parq", "pq"];

/// The value Hive writes for a null partition value.
pub const HIVE_NULL: &str = "__HIVE_DEFAULT_PARTITION__";

/// Whether `name` (a file name or path) ends in one of `extensions`, in any case.
pub fn has_extension(name: &str, extensions: &[&str]) -> bool {
    name.rsplit_once('.')
        .is_some_and(|(_, e)| extensions.iter().any(|x| e.eq_ignore_ascii_case(x)))
}

/// Whether `name` is a file a dataset reads (`.sift` or Parquet).
pub fn readable(name: &str) -> bool {
    has_extension(name, SIFT_EXTENSIONS) || has_extension(name, PARQUET_EXTENSIONS)
}

/// The files `location` names, sorted by location so that scans are stable. A location
/// that names nothing readable is an error.
pub fn resolve(location: &str, options: &StoreOptions) -> Result<Vec<DatasetFile>, StoreError> {
    let mut files = if is_url(location) {
        resolve_url(location, options)?
    } else {
        resolve_local(location)?
    };
    // A directory holding both a table and its conversion is read once: as Sift.
    if files
        .iter()
        .any(|f| has_extension(&f.location, SIFT_EXTENSIONS))
    {
        files.retain(|f| has_extension(&f.location, SIFT_EXTENSIONS));
    }
    if files.is_empty() {
        return Err(invalid(
            location,
            "names no .sift or .parquet file (a file, a directory or a glob pattern)",
        ));
    }
    files.sort_by(|a, b| a.location.cmp(&b.location));
    Ok(files)
}

/// The files of several locations, in the order given.
pub fn resolve_all(
    locations: &[impl AsRef<str>],
    options: &StoreOptions,
) -> Result<Vec<DatasetFile>, StoreError> {
    let mut files = Vec::new();
    for l in locations {
        files.extend(resolve(l.as_ref(), options)?);
    }
    Ok(files)
}

fn has_wildcard(s: &str) -> bool {
    s.contains(['*', '?', '['])
}

/// Whether a path component is hidden from datasets (`_SUCCESS`, `.tmp`).
fn hidden(component: &str) -> bool {
    component.starts_with('_') || component.starts_with('.')
}

/// The Hive partitions of `relative` (a file's path below the dataset root): its
/// directories named `key=value`. A hidden directory or file drops the file (`None`).
fn partitions_of(relative: &[&str]) -> Option<Vec<(String, Option<String>)>> {
    let (file, dirs) = relative.split_last()?;
    if hidden(file) {
        return None;
    }
    let mut out = Vec::new();
    for d in dirs {
        if hidden(d) {
            return None;
        }
        if let Some((k, v)) = d.split_once('=')
            && !k.is_empty()
        {
            let v = percent_decode(v);
            out.push((k.to_string(), (v != HIVE_NULL).then_some(v)));
        }
    }
    Some(out)
}

/// `%XX` escapes decoded (Hive escapes `/`, `=` and others in partition values).
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(h) = bytes.get(i + 1..i + 3)
            && let Ok(h) = std::str::from_utf8(h)
            && let Ok(b) = u8::from_str_radix(h, 16)
        {
            out.push(b);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn resolve_local(location: &str) -> Result<Vec<DatasetFile>, StoreError> {
    let path = Path::new(location);
    let entry = |p: PathBuf, root: &Path| {
        let relative: Vec<String> = p
            .strip_prefix(root)
            .unwrap_or(&p)
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        let parts: Vec<&str> = relative.iter().map(String::as_str).collect();
        let partitions = partitions_of(&parts)?;
        let size = std::fs::metadata(&p).ok().map(|m| m.len());
        Some(DatasetFile {
            location: p.to_string_lossy().into_owned(),
            size,
            partitions,
        })
    };
    if path.is_file() {
        return Ok(vec![DatasetFile {
            location: location.to_string(),
            size: std::fs::metadata(path).ok().map(|m| m.len()),
            partitions: Vec::new(),
        }]);
    }
    let mut files = Vec::new();
    if path.is_dir() {
        let mut stack = vec![path.to_path_buf()];
        while let Some(dir) = stack.pop() {
            let entries = std::fs::read_dir(&dir).map_err(io_err(location))?;
            for e in entries {
                let p = e.map_err(io_err(location))?.path();
                let name = p.file_name().map(|n| n.to_string_lossy().into_owned());
                if name.as_deref().is_none_or(hidden) {
                    continue;
                }
                if p.is_dir() {
                    stack.push(p);
                } else if readable(&p.to_string_lossy())
                    && let Some(f) = entry(p, path)
                {
                    files.push(f);
                }
            }
        }
    } else if has_wildcard(location) {
        let matches =
            glob::glob(location).map_err(|e| invalid(location, format!("bad pattern: {e}")))?;
        // Partitions are read below the pattern's first wildcard directory.
        let root = glob_root(location);
        for m in matches {
            let p = m.map_err(|e| invalid(location, e.to_string()))?;
            if p.is_file()
                && let Some(f) = entry(p, Path::new(&root))
            {
                files.push(f);
            }
        }
        if files.is_empty() {
            return Err(invalid(location, "no file matches the pattern"));
        }
    } else {
        return Err(invalid(location, "no such file or directory"));
    }
    Ok(files)
}

/// The directories of a pattern before its first wildcard (`a/b/*/c.sift` → `a/b`).
fn glob_root(pattern: &str) -> String {
    let first = pattern.find(['*', '?', '[']).unwrap_or(pattern.len());
    match pattern[..first].rfind('/') {
        Some(i) => pattern[..i].to_string(),
        None => String::new(),
    }
}

fn resolve_url(location: &str, options: &StoreOptions) -> Result<Vec<DatasetFile>, StoreError> {
    let url = Url::parse(location).map_err(|e| invalid(location, format!("bad URL: {e}")))?;
    let (store, path) = store_for(&url, options)?;
    let base = format!("{}://{}", url.scheme(), url.authority());
    let key = url.path().trim_start_matches('/');
    let name = |p: &ObjectPath| format!("{base}/{p}");
    if has_wildcard(key) {
        let root = glob_root(key);
        let pattern =
            glob::Pattern::new(key).map_err(|e| invalid(location, format!("bad pattern: {e}")))?;
        let prefix = ObjectPath::from_url_path(&root)
            .map_err(|e| invalid(location, format!("bad object path: {e}")))?;
        let listed = list(&store, &prefix, location)?;
        let matched: Vec<DatasetFile> = listed
            .into_iter()
            .filter(|(p, _)| {
                let options = glob::MatchOptions {
                    require_literal_separator: true,
                    ..Default::default()
                };
                pattern.matches_with(p.as_ref(), options)
            })
            .filter_map(|(p, size)| listed_file(&name(&p), &p, size, &root))
            .collect();
        if matched.is_empty() {
            return Err(invalid(location, "no object matches the pattern"));
        }
        return Ok(matched);
    }
    // A key naming a file is that file (opening it reports one that does not exist).
    if readable(key) {
        return Ok(vec![DatasetFile {
            location: location.to_string(),
            size: None,
            partitions: Vec::new(),
        }]);
    }
    // Otherwise a prefix: every readable object below it.
    let listed = list(&store, &path, location)?;
    let files: Vec<DatasetFile> = listed
        .into_iter()
        .filter(|(p, _)| readable(p.as_ref()))
        .filter_map(|(p, size)| listed_file(&name(&p), &p, size, path.as_ref()))
        .collect();
    if files.is_empty() {
        return Err(invalid(
            location,
            "holds no .sift or .parquet object (or does not exist)",
        ));
    }
    Ok(files)
}

/// A listed object below `root` as a dataset file, with the partitions of the
/// directories between; `None` for a hidden one.
fn listed_file(location: &str, p: &ObjectPath, size: u64, root: &str) -> Option<DatasetFile> {
    let relative: Vec<&str> = p
        .as_ref()
        .strip_prefix(root)
        .unwrap_or(p.as_ref())
        .trim_start_matches('/')
        .split('/')
        .collect();
    Some(DatasetFile {
        location: location.to_string(),
        size: Some(size),
        partitions: partitions_of(&relative)?,
    })
}

/// Every object below `prefix`, with its size.
fn list(
    store: &Arc<dyn ObjectStore>,
    prefix: &ObjectPath,
    location: &str,
) -> Result<Vec<(ObjectPath, u64)>, StoreError> {
    let (store, prefix) = (Arc::clone(store), prefix.clone());
    let listed = block_on(async move {
        let prefix = (!prefix.as_ref().is_empty()).then_some(prefix);
        store
            .list(prefix.as_ref())
            .map_ok(|m| (m.location, m.size))
            .try_collect::<Vec<_>>()
            .await
    })
    .map_err(io_err(location))?;
    listed.map_err(store_err(location))
}

/// Opens one file of a dataset: a local file directly (mapped), an object through its
/// store by byte range.
pub fn open_table(
    location: &str,
    options: &StoreOptions,
    verify_checksums: bool,
) -> Result<Table, StoreError> {
    if !is_url(location) {
        return Ok(Table::open_with(location, verify_checksums)?);
    }
    let url = Url::parse(location).map_err(|e| invalid(location, format!("bad URL: {e}")))?;
    if url.scheme() == "file" {
        let path = url
            .to_file_path()
            .map_err(|_| invalid(location, "not a local file path"))?;
        return Ok(Table::open_with(path, verify_checksums)?);
    }
    let (store, path) = store_for(&url, options)?;
    let source = ObjectFile::new(store, path, location.to_string(), options.max_in_flight);
    Ok(Table::open_ranges(
        Arc::new(source),
        verify_checksums,
        options.ranges,
    )?)
}

/// The dataset of the files `locations` name (see [`resolve`]), each opened by
/// [`open_table`] when a scan needs it.
pub fn open_dataset(
    locations: &[impl AsRef<str>],
    options: &StoreOptions,
    verify_checksums: bool,
) -> Result<Dataset, StoreError> {
    let files = resolve_all(locations, options)?;
    let options = options.clone();
    let opener = move |f: &DatasetFile| {
        open_table(&f.location, &options, verify_checksums).map_err(|e| match e {
            StoreError::Scan(e) => e,
            other => sift_scan::Error::Invalid(other.to_string()),
        })
    };
    Ok(Dataset::new(files, Arc::new(opener))?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hive_directories_become_partitions() {
        assert_eq!(
            partitions_of(&["year=2024", "month=01", "part-0.sift"]),
            Some(vec![
                ("year".into(), Some("2024".into())),
                ("month".into(), Some("01".into()))
            ])
        );
        assert_eq!(
            partitions_of(&["plain", "k=__HIVE_DEFAULT_PARTITION__", "a.sift"]),
            Some(vec![("k".into(), None)])
        );
        assert_eq!(
            partitions_of(&["k=a%2Fb", "a.sift"]),
            Some(vec![("k".into(), Some("a/b".into()))])
        );
        assert_eq!(partitions_of(&["_temporary", "a.sift"]), None);
        assert_eq!(partitions_of(&["k=1", ".a.sift"]), None);
        assert_eq!(glob_root("a/b/*/c.sift"), "a/b");
        assert_eq!(glob_root("*.sift"), "");
    }
}
