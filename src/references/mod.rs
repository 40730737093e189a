//! Kerchunk reference sets (fsspec's `ReferenceFileSystem`, as kerchunk and VirtualiZarr write
//! them) opened as Zarr stores: a netCDF-4/HDF5 archive queried where it is, each Zarr key
//! mapped to inline data or a byte range of an original file.
//!
//! - `set.rs` is a set as read, whatever its form: each key's inline bytes or file range;
//! - `json.rs` parses the JSON forms (spec versions 0 and 1, `templates`, `gen`);
//! - `parquet.rs` reads the Parquet layout (`refs.parq/`);
//! - `template.rs` renders the Jinja subset those use;
//! - `store.rs` serves the keys as an `ObjectStore`, so the scan reads them as any store;
//! - here: recognising a reference set, resolving its URLs against the reference file, the
//!   allow-list every URL is checked against before any byte is read, and the stores the
//!   files live in.

mod json;
mod parquet;
mod set;
mod store;
mod template;

use std::collections::BTreeMap;

use datafusion::execution::runtime_env::RuntimeEnv;
use object_store::ObjectStoreExt;
use object_store::path::Path;
use url::Url;

use crate::error::{Result, ZarrError};
use crate::limits::Limits;
use crate::object_stores::redact;
use crate::options::ZarrOptions;
use crate::store::{ZarrStore, file_url, location_url};

use set::Entry;
use store::{ReferenceStore, Target};

/// The forms a reference set comes in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    /// A `.json` file.
    Json,
    /// A `.parq` (or `.parquet`) directory of Parquet record files.
    Parquet,
}

/// The form of reference set `location` names, by its name: a `.json` file (a Zarr store is a
/// directory; its own documents are `zarr.json`, `.zgroup` and `.zarray` inside it), or a
/// `.parq`/`.parquet` directory; `None` for a store.
fn form(location: &str) -> Option<Form> {
    let path = location.split(['?', '#']).next().unwrap_or(location);
    let path = path.trim_end_matches('/');
    let name = path.rsplit('/').next().unwrap_or(path).to_ascii_lowercase();
    let named = |ext: &str| name.len() > ext.len() && name.ends_with(ext);
    if named(".json") && name != "zarr.json" {
        Some(Form::Json)
    } else if named(".parq") || named(".parquet") {
        Some(Form::Parquet)
    } else {
        None
    }
}

/// Whether `location` names a reference set rather than a store.
pub(crate) fn is_reference_set(location: &str) -> bool {
    form(location).is_some()
}

/// The reference set at `location` as a store: the reference file read within
/// `max_metadata_bytes` and parsed within `max_references`, every URL it names resolved
/// against it and checked against `reference_targets` (by default the reference file's own
/// directory), and a store opened for each file.
pub(crate) async fn open(
    runtime: &RuntimeEnv,
    location: &str,
    options: &ZarrOptions,
) -> Result<ZarrStore> {
    let limits = Limits::of(options);
    let (file, base, parsed, modified) = match form(location) {
        Some(Form::Parquet) => {
            let dir = ZarrStore::open(runtime, location, &options.storage)?;
            let parsed = parquet::parse(&dir, &limits, options.max_references).await?;
            // Relative URLs name files beside the set's directory, as beside a JSON file.
            let mut base = dir.url().clone();
            base.set_path(dir.url().path().trim_end_matches('/'));
            (dir, base, parsed, chrono::Utc::now())
        }
        _ => {
            let file = ZarrStore::open_file(runtime, location, &options.storage)?;
            let (meta, parsed) = read_json(&file, &limits, options.max_references).await?;
            (file, file_url(location)?, parsed, meta)
        }
    };
    let shown = file.display_location().to_string();
    let invalid = |at: &str, message: String| ZarrError::References {
        references: shown.clone(),
        at: at.to_string(),
        message,
    };
    let allowed = allowed_prefixes(&base, options.reference_targets.as_deref())?;
    // Every URL resolved and checked before any byte of a file is read.
    let mut urls = Vec::with_capacity(parsed.targets.len());
    for (id, written) in parsed.targets.iter().enumerate() {
        // The key an error names is looked for only when there is one (a scan of every key).
        let key = || first_key(&parsed.entries, id);
        let url = resolve(&base, written).map_err(|e| {
            invalid(
                &key(),
                format!("its URL '{written}' is not a URL or path: {e}"),
            )
        })?;
        if !allowed.iter().any(|prefix| within(&url, prefix)) {
            return Err(invalid(
                &key(),
                format!(
                    "it reads {}, outside the places this reference set may read ({}); name its \
                     prefix in the option reference_targets",
                    redact(&url),
                    allowed.iter().map(redact).collect::<Vec<_>>().join(", ")
                ),
            ));
        }
        urls.push(url);
    }
    let mut targets = Vec::with_capacity(urls.len());
    for url in &urls {
        let store = ZarrStore::open_url_of_file(runtime, url.clone(), &options.storage)?;
        let (objects, path) = store.parts();
        targets.push(Target {
            store: objects.clone(),
            path: path.clone(),
            shown: store.display_location().to_string(),
        });
    }
    let adapter = std::sync::Arc::new(ReferenceStore::new(
        parsed.entries,
        targets,
        shown.clone(),
        modified,
    ));
    Ok(file
        .with_object_store(adapter.clone(), Path::default(), shown)
        .reading_many_with(adapter))
}

/// `written` (a reference's URL) as a URL: a URL as it is, a path relative to the reference
/// file's directory (`base`), an absolute path on the reference file's own store.
fn resolve(base: &Url, written: &str) -> std::result::Result<Url, url::ParseError> {
    match written.contains("://") {
        true => Url::parse(written),
        false => base.join(written),
    }
}

/// The JSON reference set in `file`, read within `max_metadata_bytes` and parsed within
/// `max_references`, and when it was last modified.
async fn read_json(
    file: &ZarrStore,
    limits: &Limits,
    max_references: u64,
) -> Result<(chrono::DateTime<chrono::Utc>, set::Parsed)> {
    let shown = file.display_location().to_string();
    let invalid = |at: &str, message: String| ZarrError::References {
        references: shown.clone(),
        at: at.to_string(),
        message,
    };
    let (objects, path) = file.parts();
    let meta = objects
        .head(path)
        .await
        .map_err(|e| invalid("", format!("cannot be read: {e}")))?;
    limits
        .metadata
        .check(&shown, "reference file", Some(meta.size))?;
    let text = file
        .get("", limits.metadata)
        .await?
        .ok_or_else(|| invalid("", "does not exist".to_string()))?;
    let parsed = json::parse(&text, max_references).map_err(|e| invalid(&e.at, e.message))?;
    Ok((meta.last_modified, parsed))
}

/// The fuzz target's body: any bytes as a JSON reference set (within `max_references`), each
/// URL it names resolved against a reference file in `/data/refs/` and checked against that
/// directory.
pub(crate) fn fuzz_parse(data: &[u8], max_references: u64) {
    let Ok(parsed) = json::parse(data, max_references) else {
        return;
    };
    let Ok(base) = Url::parse("file:///data/refs/refs.json") else {
        return;
    };
    let Ok(allowed) = allowed_prefixes(&base, None) else {
        return;
    };
    for written in &parsed.targets {
        if let Ok(url) = resolve(&base, written) {
            let _ = allowed.iter().any(|p| within(&url, p));
        }
    }
}

/// The URL prefixes a reference may read: `configured`, or the reference file's directory.
fn allowed_prefixes(base: &Url, configured: Option<&[String]>) -> Result<Vec<Url>> {
    match configured {
        Some(prefixes) => prefixes
            .iter()
            .map(|p| {
                location_url(p).map_err(|e| {
                    ZarrError::Option(format!("reference_targets '{p}' is not a URL prefix: {e}"))
                })
            })
            .collect(),
        None => Ok(vec![base.join("./").map_err(|e| {
            ZarrError::Location(format!("'{}' has no directory: {e}", redact(base)))
        })?]),
    }
}

/// Whether `url` lies below `prefix` (same scheme and host, and a path that continues the
/// prefix's at a `/`).
fn within(url: &Url, prefix: &Url) -> bool {
    url.scheme() == prefix.scheme()
        && url.host_str() == prefix.host_str()
        && url.port() == prefix.port()
        && match url.path().strip_prefix(prefix.path()) {
            Some(rest) => prefix.path().ends_with('/') || rest.is_empty() || rest.starts_with('/'),
            None => false,
        }
}

/// The first key that reads file `id`, for errors.
fn first_key(entries: &BTreeMap<String, Entry>, id: usize) -> String {
    entries
        .iter()
        .find(|(_, e)| match e {
            Entry::Whole { target } | Entry::Range { target, .. } => *target as usize == id,
            Entry::Inline(_) => false,
        })
        .map_or_else(String::new, |(k, _)| k.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_sets_are_json_files_and_parquet_directories() {
        assert!(is_reference_set("/data/refs.json"));
        assert!(is_reference_set("s3://b/x/REFS.JSON"));
        assert_eq!(form("/data/refs.parq/"), Some(Form::Parquet));
        assert_eq!(form("s3://b/refs.parquet"), Some(Form::Parquet));
        assert!(!is_reference_set("/data/store.zarr"));
        assert!(!is_reference_set("/data/store.zarr/zarr.json"));
        assert!(!is_reference_set(".json"));
    }

    #[test]
    fn urls_are_allowed_below_a_prefix_only() {
        let url = |s: &str| Url::parse(s).unwrap();
        let dir = url("file:///data/nc/");
        assert!(within(&url("file:///data/nc/a.nc"), &dir));
        assert!(within(&url("file:///data/nc/sub/a.nc"), &dir));
        assert!(!within(
            &url("file:///data/nc2/a.nc"),
            &url("file:///data/nc")
        ));
        assert!(within(
            &url("file:///data/nc/a.nc"),
            &url("file:///data/nc")
        ));
        assert!(!within(&url("file:///data/other.nc"), &dir));
        assert!(!within(&url("s3://data/nc/a.nc"), &dir));
        assert!(!within(&url("s3://other/nc/a.nc"), &url("s3://bucket/nc/")));
        // Dot segments are resolved before the check.
        let base = url("file:///data/nc/refs.json");
        assert!(!within(&base.join("../secret.nc").unwrap(), &dir));
        assert!(within(&base.join("sub/../a.nc").unwrap(), &dir));
    }
}
