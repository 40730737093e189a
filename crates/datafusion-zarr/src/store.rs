//! Locations and object stores: turns a user's location into an [`ObjectStore`] from the
//! session's registry, and reads keys below the store root with size limits and path safety.

use std::sync::Arc;

use bytes::Bytes;
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::execution::runtime_env::RuntimeEnv;
use object_store::path::Path;
use object_store::{GetOptions, GetRange, ObjectStore};
use url::Url;

use crate::error::{Result, ZarrError};
use crate::limits::Limit;

/// A Zarr store: an object store and the prefix of the store root within it.
#[derive(Debug, Clone)]
pub(crate) struct ZarrStore {
    store: Arc<dyn ObjectStore>,
    root: Path,
    url: Url,
}

impl std::fmt::Display for ZarrStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.display_location())
    }
}

impl ZarrStore {
    /// Resolves `location` (a local directory, or a URL whose scheme has an object store
    /// registered in `runtime`) to a store.
    pub(crate) fn open(runtime: &RuntimeEnv, location: &str) -> Result<Self> {
        let url = location_url(location)?;
        let store_url = ObjectStoreUrl::parse(&url[..url::Position::BeforePath])
            .map_err(|e| ZarrError::Location(format!("'{location}' is not a usable URL: {e}")))?;
        let store = runtime.object_store(&store_url).map_err(|e| {
            ZarrError::Location(format!(
                "'{location}': no object store is registered for {}: {e}",
                store_url.as_str()
            ))
        })?;
        let root = Path::from_url_path(url.path())
            .map_err(|e| ZarrError::Location(format!("'{location}' has an invalid path: {e}")))?;
        Ok(Self { store, root, url })
    }

    /// The store's URL, as shown in errors and plans.
    pub(crate) fn display_location(&self) -> &str {
        let s = self.url.as_str();
        s.strip_suffix('/').unwrap_or(s)
    }

    /// The object path of `key` (a `/`-separated path relative to the store root).
    pub(crate) fn key_path(&self, key: &str) -> Path {
        let mut path = self.root.clone();
        for part in key.split('/').filter(|p| !p.is_empty()) {
            path = path.clone().join(part);
        }
        path
    }

    /// Reads the object at `key`, or `None` if it does not exist. Objects larger than `limit`
    /// are rejected before their body is read.
    pub(crate) async fn get(&self, key: &str, limit: Limit) -> Result<Option<Bytes>> {
        Ok(self
            .get_opts(key, GetOptions::default(), limit)
            .await?
            .map(|(bytes, _)| bytes))
    }

    /// Reads `range` of the object at `key`: the bytes and the object's whole size, or `None`
    /// if it does not exist. Ranges longer than `limit` are rejected before they are read.
    pub(crate) async fn get_range(
        &self,
        key: &str,
        range: GetRange,
        limit: Limit,
    ) -> Result<Option<(Bytes, u64)>> {
        let options = GetOptions::default().with_range(Some(range));
        self.get_opts(key, options, limit).await
    }

    async fn get_opts(
        &self,
        key: &str,
        options: GetOptions,
        limit: Limit,
    ) -> Result<Option<(Bytes, u64)>> {
        let path = self.key_path(key);
        let location = || format!("{}/{}", self.display_location(), key);
        let result = match self.store.get_opts(&path, options).await {
            Ok(r) => r,
            Err(object_store::Error::NotFound { .. }) => {
                // Object stores have no directories; a local one reports a directory where an
                // object should be as missing. That is a broken store, not a missing chunk.
                if self.url.scheme() == "file"
                    && let Ok(dir) = self.url.join(key)
                    && let Ok(local) = dir.to_file_path()
                    && local.is_dir()
                {
                    return Err(ZarrError::metadata(
                        location(),
                        "is a directory where a chunk or metadata object should be",
                    ));
                }
                return Ok(None);
            }
            Err(source) => {
                return Err(ZarrError::Store {
                    location: location(),
                    source,
                });
            }
        };
        let size = result.meta.size;
        limit.check(
            location(),
            "object",
            Some(result.range.end - result.range.start),
        )?;
        let bytes = result.bytes().await.map_err(|source| ZarrError::Store {
            location: location(),
            source,
        })?;
        Ok(Some((bytes, size)))
    }

    /// Names of the direct children (sub-directories) of `prefix`, sorted.
    pub(crate) async fn list_children(&self, prefix: &str) -> Result<Vec<String>> {
        let path = self.key_path(prefix);
        let listing = self
            .store
            .list_with_delimiter(Some(&path))
            .await
            .map_err(|source| ZarrError::Store {
                location: format!("{}/{}", self.display_location(), prefix),
                source,
            })?;
        let mut names: Vec<String> = listing
            .common_prefixes
            .iter()
            .filter_map(|p| p.filename().map(str::to_string))
            .collect();
        names.sort();
        Ok(names)
    }
}

/// Turns a location into a URL: URLs pass through, local paths must name an existing directory.
fn location_url(location: &str) -> Result<Url> {
    if location.contains("://") {
        let mut url = Url::parse(location)
            .map_err(|e| ZarrError::Location(format!("'{location}' is not a URL: {e}")))?;
        if url.scheme() == "file" {
            let path = url
                .to_file_path()
                .map_err(|_| ZarrError::Location(format!("'{location}' is not a file path")))?;
            return local_url(location, &path);
        }
        if !url.path().ends_with('/') {
            let p = format!("{}/", url.path());
            url.set_path(&p);
        }
        return Ok(url);
    }
    local_url(location, std::path::Path::new(location))
}

fn local_url(location: &str, path: &std::path::Path) -> Result<Url> {
    let abs = std::fs::canonicalize(path)
        .map_err(|e| ZarrError::Location(format!("'{location}' cannot be opened: {e}")))?;
    if !abs.is_dir() {
        return Err(ZarrError::Location(format!(
            "'{location}' is a file, not a Zarr store directory"
        )));
    }
    Url::from_directory_path(&abs)
        .map_err(|_| ZarrError::Location(format!("'{location}' is not an absolute path")))
}

/// Normalises a node path inside a store: `/`-separated, no empty or `.` segments.
/// A `..` segment is rejected: it would leave the store root.
pub(crate) fn normalize_node_path(path: &str) -> Result<String> {
    let mut parts = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                return Err(ZarrError::Option(format!(
                    "path '{path}' contains '..', which would leave the store root"
                )));
            }
            p => parts.push(p),
        }
    }
    Ok(parts.join("/"))
}

/// Joins a node path and a key.
pub(crate) fn join_key(node: &str, key: &str) -> String {
    if node.is_empty() {
        key.to_string()
    } else {
        format!("{node}/{key}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_paths_are_normalised_and_dotdot_rejected() {
        assert_eq!(normalize_node_path("/a//b/./c/").unwrap(), "a/b/c");
        assert_eq!(normalize_node_path("").unwrap(), "");
        assert!(normalize_node_path("a/../../etc").is_err());
    }
}
