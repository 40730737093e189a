//! The session's `zarr.*` options: `SET zarr.string_type = 'utf8view'` or `SET
//! zarr.compression = 'blosc'` make a session default that `CREATE EXTERNAL TABLE … STORED AS
//! ZARR`, `read_zarr(…)` and `COPY … STORED AS ZARR` start from, and a statement's own options
//! win, key by key (as DataFusion's Parquet format starts from the session's table options).
//!
//! [`ZarrSessionOptions`] is a DataFusion [`ConfigExtension`] with the prefix `zarr`, which
//! [`register`](crate::register) inserts. It keeps each value as the text given, once checked
//! by the parser that reads it ([`ZarrOptions`] for reading, [`WriteOptions`] for writing), so
//! that a key is parsed in one place. The keys are those of both: `branch` is both, the
//! Icechunk branch read and the one a write commits to. Storage options (`aws.*`, …) are not
//! session options: a session's settings are shown by `SHOW ALL` and handed on as text (to a
//! Ballista scheduler, across datafusion-ffi), which would show their secrets.

use std::any::Any;
use std::collections::BTreeMap;

use datafusion::common::config::{
    ConfigEntry, ConfigExtension, ConfigOptions, DATAFUSION_FFI_CONFIG_NAMESPACE, ExtensionOptions,
};
use datafusion::error::{DataFusionError, Result};

use crate::error::ZarrError;
use crate::object_stores::{STORAGE_PREFIXES, StorageOptions};
use crate::options::ZarrOptions;
use crate::write::WriteOptions;

/// The session defaults of the Zarr options, a DataFusion [`ConfigExtension`] with the prefix
/// `zarr` that [`register`](crate::register) inserts: `SET zarr.<option> = '<value>'` sets one,
/// `SHOW zarr.<option>` shows it (NULL: not set), and an empty value unsets it (DataFusion's
/// `RESET` knows only its own `datafusion.*` options). `CREATE EXTERNAL TABLE … STORED AS
/// ZARR` and `read_zarr(…)` start from the options of reading that are set, `COPY … STORED AS
/// ZARR` from those of writing, and a statement's own options win, key by key. The keys are
/// those of [`ZarrOptions`] and [`WriteOptions`] (`branch` is both); storage options are not
/// session options, since a session's settings are shown and handed on as text.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> datafusion::error::Result<()> {
/// use datafusion::prelude::SessionContext;
/// use datafusion_zarr::ZarrSessionOptions;
///
/// let ctx = SessionContext::new();
/// datafusion_zarr::register(&ctx);
/// ctx.sql("SET zarr.string_type = 'utf8view'").await?;
/// let state = ctx.state();
/// let options = ZarrSessionOptions::from_config(state.config_options())?;
/// assert_eq!(options.get("string_type"), Some("utf8view"));
/// assert!(ctx.sql("SET zarr.string_type = 'utf16'").await.is_err());
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ZarrSessionOptions {
    /// The values set, by key (lower case, without `zarr.`), as given.
    values: BTreeMap<String, String>,
}

impl ConfigExtension for ZarrSessionOptions {
    const PREFIX: &'static str = "zarr";
}

/// What an option is read by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Uses {
    read: bool,
    write: bool,
}

/// The uses of `key`, or `None` when it is no option of reading or writing.
fn uses(key: &str) -> Option<Uses> {
    let uses = Uses {
        read: ZarrOptions::KEYS.contains(&key),
        write: WriteOptions::KEYS.contains(&key),
    };
    (uses.read || uses.write).then_some(uses)
}

/// Every key, in the order of the documentation: the reading options, then the writing ones
/// that are not also reading options.
fn keys() -> impl Iterator<Item = &'static str> {
    let writes =
        (WriteOptions::KEYS.iter().copied()).filter(|key| !ZarrOptions::KEYS.contains(key));
    ZarrOptions::KEYS.iter().copied().chain(writes)
}

/// What `SHOW zarr.<key> VERBOSE` says of `key`: its meaning in the documentation.
fn description(key: &str) -> &'static str {
    if key == "branch" {
        return "Icechunk repositories: the branch read (its tip, or with `as_of` its history) \
                and the branch COPY commits to (default `main`)";
    }
    ZarrOptions::documentation()
        .into_iter()
        .find(|doc| doc.key == key)
        .map(|doc| doc.meaning)
        .or_else(|| {
            WriteOptions::documentation()
                .into_iter()
                .find(|o| o.key == key)
                .map(|o| o.meaning)
        })
        .unwrap_or("")
}

fn config_error(message: String) -> DataFusionError {
    DataFusionError::Configuration(message)
}

/// A parser's rejection of `zarr.<key>`'s value, naming the key.
fn bad_value(key: &str, error: ZarrError) -> DataFusionError {
    let message = match error {
        ZarrError::Option(message) => message,
        other => other.to_string(),
    };
    config_error(format!("zarr.{key}: {message}"))
}

impl ZarrSessionOptions {
    /// No option set: every one has its own default.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets `key` (an option of reading or of writing, without `zarr.`) to `value`, once the
    /// parser of every use of the key accepts it; an empty value unsets it. An unknown key, a
    /// storage option or a bad value is an error naming the key and what it takes. Options
    /// that hold only together (`shard_rows` and `chunk_rows`, `compression_level` and
    /// `compression`) are checked when a statement uses them, with its own options.
    pub fn set(&mut self, key: &str, value: &str) -> Result<()> {
        let key = key.trim().to_ascii_lowercase();
        let Some(uses) = uses(&key) else {
            return Err(config_error(unknown_key_message(&key)));
        };
        if value.is_empty() {
            self.values.remove(&key);
            return Ok(());
        }
        if uses.read {
            ZarrOptions::default()
                .set(&key, value)
                .map_err(|e| bad_value(&key, e))?;
        }
        if uses.write {
            WriteOptions::default()
                .set(&key, value)
                .map_err(|e| bad_value(&key, e))?;
        }
        self.values.insert(key, value.to_string());
        Ok(())
    }

    /// The value of `key` (without `zarr.`), if set.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.values.get(key).map(String::as_str)
    }

    /// The options of reading that are set, as the pairs [`ZarrOptions::from_pairs`] reads.
    pub fn read_pairs(&self) -> Vec<(&str, &str)> {
        self.pairs(|uses| uses.read)
    }

    /// The options of writing that are set, as the pairs [`WriteOptions::from_pairs`] reads.
    pub fn write_pairs(&self) -> Vec<(&str, &str)> {
        self.pairs(|uses| uses.write)
    }

    fn pairs(&self, used: impl Fn(Uses) -> bool) -> Vec<(&str, &str)> {
        self.values
            .iter()
            .filter(|(key, _)| uses(key).is_some_and(&used))
            .map(|(key, value)| (key.as_str(), value.as_str()))
            .collect()
    }

    /// The options of reading a table starts from: the defaults, with the session's values.
    pub fn read_options(&self) -> Result<ZarrOptions> {
        Ok(ZarrOptions::from_pairs(self.read_pairs())?)
    }

    /// The session's `zarr.*` values in `config`: those of the extension
    /// [`register`](crate::register) inserted; in a session of another DataFusion across
    /// datafusion-ffi (datafusion-python), the `zarr.*` entries of its FFI extension options,
    /// checked here (that side keeps whatever was set, unchecked); none in a session with
    /// neither.
    pub fn from_config(config: &ConfigOptions) -> Result<Self> {
        if let Some(options) = config.extensions.get::<Self>() {
            return Ok(options.clone());
        }
        // datafusion-ffi's options keep `zarr.<key>` (as SET gave it) and, once carried across
        // the FFI, `datafusion_ffi.zarr.<key>` too: the latter first, so the former wins.
        let mut found: BTreeMap<String, String> = BTreeMap::new();
        let ffi_prefix = format!("{DATAFUSION_FFI_CONFIG_NAMESPACE}.");
        for (namespace, extension) in config.extensions.iter() {
            if namespace != DATAFUSION_FFI_CONFIG_NAMESPACE {
                continue;
            }
            let entries = extension.entries();
            for carried in [true, false] {
                for entry in &entries {
                    let key = match entry.key.strip_prefix(&ffi_prefix) {
                        Some(key) if carried => key,
                        None if !carried => entry.key.as_str(),
                        _ => continue,
                    };
                    if let (Some(key), Some(value)) = (key.strip_prefix("zarr."), &entry.value) {
                        found.insert(key.to_string(), value.clone());
                    }
                }
            }
        }
        let mut options = Self::default();
        for (key, value) in &found {
            options.set(key, value)?;
        }
        Ok(options)
    }
}

/// The error of a key that is no session option: a storage option, or no option at all.
fn unknown_key_message(key: &str) -> String {
    if StorageOptions::is_storage_key(key) {
        return format!(
            "zarr.{key}: storage options ({}) are not session options: SHOW ALL and the settings \
             a session hands on would show their secrets; give them in OPTIONS (…) or \
             read_zarr(…), or register the object store with the session",
            STORAGE_PREFIXES
                .iter()
                .map(|p| format!("{p}*"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let reads = ZarrOptions::KEYS.join(", ");
    let (both, writes): (Vec<&str>, Vec<&str>) =
        (WriteOptions::KEYS.iter()).partition(|k| ZarrOptions::KEYS.contains(k));
    format!(
        "unknown option 'zarr.{key}'; the zarr.* options are those of reading ({reads}) and of \
         COPY … STORED AS ZARR ({}; {} for both)",
        writes.join(", "),
        both.join(", ")
    )
}

impl ExtensionOptions for ZarrSessionOptions {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }

    fn cloned(&self) -> Box<dyn ExtensionOptions> {
        Box::new(self.clone())
    }

    fn set(&mut self, key: &str, value: &str) -> Result<()> {
        ZarrSessionOptions::set(self, key, value)
    }

    /// Every option, under its full key (`zarr.string_type`, what `SET` and `SHOW` name and
    /// what a session's settings hand on); an unset one has no value.
    fn entries(&self) -> Vec<ConfigEntry> {
        keys()
            .map(|key| ConfigEntry {
                key: format!("{}.{key}", Self::PREFIX),
                value: self.values.get(key).cloned(),
                description: description(key),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_checked_by_their_parsers_and_listed_when_unknown() {
        let mut options = ZarrSessionOptions::new();
        options.set("String_Type", "utf8view").unwrap();
        options.set("compression", "blosc").unwrap();
        options.set("branch", "dev").unwrap();
        assert_eq!(
            options.read_pairs(),
            [("branch", "dev"), ("string_type", "utf8view")]
        );
        assert_eq!(
            options.write_pairs(),
            [("branch", "dev"), ("compression", "blosc")]
        );
        let message = options.set("colour", "red").unwrap_err().to_string();
        assert!(
            message.contains("'zarr.colour'")
                && message.contains("string_type")
                && message.contains("compression"),
            "{message}"
        );
        let message = options
            .set("compression", "brotli")
            .unwrap_err()
            .to_string();
        assert!(
            message.contains("zarr.compression") && message.contains("zstd, blosc"),
            "{message}"
        );
        let message = options.set("aws.secret_access_key", "s3cr3t").unwrap_err();
        assert!(!message.to_string().contains("s3cr3t"), "{message}");
        // A bad value keeps the old one; an empty value unsets.
        assert_eq!(options.get("compression"), Some("blosc"));
        options.set("compression", "").unwrap();
        assert_eq!(options.get("compression"), None);
    }

    #[test]
    fn entries_name_every_key_in_full_and_read_back() {
        let mut options = ZarrSessionOptions::new();
        options.set("zarr_format", "2").unwrap();
        let entries = ExtensionOptions::entries(&options);
        assert_eq!(entries.len(), keys().count());
        assert!(entries.iter().all(|e| !e.description.is_empty()));
        let set: Vec<_> = entries.iter().filter(|e| e.value.is_some()).collect();
        assert_eq!(set.len(), 1);
        assert_eq!(set[0].key, "zarr.zarr_format");

        // Through ConfigOptions, as SET and a Ballista scheduler's settings do.
        let mut config = ConfigOptions::default();
        config.extensions.insert(ZarrSessionOptions::new());
        config.set("zarr.zarr_format", "2").unwrap();
        assert_eq!(ZarrSessionOptions::from_config(&config).unwrap(), options);
    }

    /// datafusion-ffi's `FFI_ExtensionOptions` as a foreign session holds it: one map of full
    /// keys under the namespace `datafusion_ffi`, whatever was set.
    #[derive(Debug, Clone, Default)]
    struct FfiOptions(BTreeMap<String, String>);

    impl ConfigExtension for FfiOptions {
        const PREFIX: &'static str = DATAFUSION_FFI_CONFIG_NAMESPACE;
    }

    impl ExtensionOptions for FfiOptions {
        fn as_any(&self) -> &dyn Any {
            self
        }
        fn as_any_mut(&mut self) -> &mut dyn Any {
            self
        }
        fn cloned(&self) -> Box<dyn ExtensionOptions> {
            Box::new(self.clone())
        }
        fn set(&mut self, key: &str, value: &str) -> Result<()> {
            self.0.insert(key.to_string(), value.to_string());
            Ok(())
        }
        fn entries(&self) -> Vec<ConfigEntry> {
            let entry = |(key, value): (&String, &String)| ConfigEntry {
                key: key.clone(),
                value: Some(value.clone()),
                description: "ffi_config_options",
            };
            self.0.iter().map(entry).collect()
        }
    }

    #[test]
    fn a_foreign_sessions_values_are_read_and_checked_when_used() {
        // Carried across the FFI, a key is there prefixed too (datafusion-ffi's
        // `FFI_ConfigOptions` adds the extension's namespace to its entries' keys).
        let mut carried = FfiOptions::default();
        let key = "datafusion_ffi.zarr.string_type";
        carried.0.insert(key.into(), "large_utf8".into());
        let mut config = ConfigOptions::default();
        config.extensions.insert(carried);
        // SET reaches the FFI options with the full key (ConfigOptions::set routes an unknown
        // namespace there).
        config.set("zarr.string_type", "utf8view").unwrap();
        config.set("zarr.compression", "").unwrap();
        config.set("other.key", "1").unwrap();
        let options = ZarrSessionOptions::from_config(&config).unwrap();
        assert_eq!(options.read_pairs(), [("string_type", "utf8view")]);
        assert!(options.write_pairs().is_empty());
        config.set("zarr.string_type", "utf16").unwrap();
        let message = ZarrSessionOptions::from_config(&config)
            .unwrap_err()
            .to_string();
        assert!(message.contains("zarr.string_type"), "{message}");
        // No extension: no values, as before `register`.
        let none = ZarrSessionOptions::from_config(&ConfigOptions::default()).unwrap();
        assert_eq!(none, ZarrSessionOptions::new());
    }
}
