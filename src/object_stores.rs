//! Remote object stores: the storage options a table takes (datafusion-cli's `aws.*`, `gcp.*`,
//! `azure.*` names, plus `http.*` and `retry.*`), and the S3, GCS, Azure or HTTP store built
//! from a URL, those options and the environment when the session has none registered.
//!
//! The keys are object_store's own configuration keys under a prefix, parsed by object_store
//! (so every key it knows works, under the names its documentation gives). Values are secrets
//! until shown otherwise: `Debug` prints only the keys.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use object_store::ObjectStore;
// object_store's client types come with its remote stores; without any, only file:// is read.
#[cfg(any(feature = "aws", feature = "gcp", feature = "azure", feature = "http"))]
use object_store::{ClientConfigKey, RetryConfig};
use url::Url;

use crate::error::{Result, ZarrError};

/// The option prefixes that configure the object store rather than the table.
pub const STORAGE_PREFIXES: &[&str] = &["aws.", "gcp.", "azure.", "http.", "retry."];

/// Storage options of a table: object store configuration by prefix. Keys are lower case with
/// their prefix (`aws.region`); values are kept as given and never printed.
///
/// ```
/// use datafusion_zarr::ZarrOptions;
///
/// let mut options = ZarrOptions::default();
/// options.set("aws.region", "eu-west-1")?;
/// options.set("aws.secret_access_key", "s3cr3t")?;
/// assert_eq!(options.storage.get("aws.region"), Some("eu-west-1"));
/// assert!(!format!("{options:?}").contains("s3cr3t"));
/// assert!(options.set("aws.colour", "red").is_err());
/// assert!(datafusion_zarr::supported_schemes().contains(&"s3://"));
/// # Ok::<(), datafusion_zarr::ZarrError>(())
/// ```
#[derive(Clone, Default, PartialEq, Eq)]
pub struct StorageOptions {
    pairs: BTreeMap<String, String>,
}

impl std::fmt::Debug for StorageOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Keys only: values may be keys, tokens or passwords.
        f.debug_set().entries(self.pairs.keys()).finish()
    }
}

impl StorageOptions {
    /// Whether `key` (lower case, without `format.`) is a storage option.
    pub fn is_storage_key(key: &str) -> bool {
        STORAGE_PREFIXES.iter().any(|p| key.starts_with(p))
    }

    /// Sets `key` (with its prefix) after checking that the store it configures knows it.
    pub fn set(&mut self, key: &str, value: &str) -> Result<()> {
        let key = key.to_ascii_lowercase();
        check_key(&key, value)?;
        self.pairs.insert(key, value.to_string());
        Ok(())
    }

    /// Whether no storage option is set.
    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// The keys set, sorted (values are not shown: they may be secrets).
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.pairs.keys().map(String::as_str)
    }

    /// The value of `key`, if set.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.pairs.get(key).map(String::as_str)
    }

    /// The options under `prefix` (`"aws."`), without it.
    #[cfg_attr(
        not(any(feature = "aws", feature = "gcp", feature = "azure", feature = "http")),
        allow(dead_code)
    )]
    fn under<'a>(&'a self, prefix: &'a str) -> impl Iterator<Item = (&'a str, &'a str)> + 'a {
        self.pairs
            .iter()
            .filter_map(move |(k, v)| k.strip_prefix(prefix).map(|rest| (rest, v.as_str())))
    }

    /// object_store's retry policy, with `retry.max_retries` and `retry.timeout` applied.
    #[cfg(any(feature = "aws", feature = "gcp", feature = "azure", feature = "http"))]
    fn retry(&self) -> Result<RetryConfig> {
        let mut retry = RetryConfig::default();
        for (key, value) in self.under("retry.") {
            match parse_retry(key, value)? {
                RetrySetting::MaxRetries(n) => retry.max_retries = n,
                RetrySetting::Timeout(t) => retry.retry_timeout = t,
            }
        }
        Ok(retry)
    }
}

/// One retry option (only checked, never applied, without the remote features).
#[cfg_attr(
    not(any(feature = "aws", feature = "gcp", feature = "azure", feature = "http")),
    allow(dead_code)
)]
enum RetrySetting {
    MaxRetries(usize),
    Timeout(Duration),
}

/// Parses the retry option `key` (without `retry.`).
fn parse_retry(key: &str, value: &str) -> Result<RetrySetting> {
    match key {
        "max_retries" => value
            .trim()
            .parse()
            .map(RetrySetting::MaxRetries)
            .map_err(|_| {
                ZarrError::Option(format!("retry.max_retries '{value}' is not a whole number"))
            }),
        "timeout" => parse_duration("retry.timeout", value).map(RetrySetting::Timeout),
        _ => Err(ZarrError::Option(format!(
            "'retry.{key}' is not a retry option; known: retry.max_retries, retry.timeout"
        ))),
    }
}

/// Rejects a storage key that its store does not know, or a retry value that does not parse.
fn check_key(key: &str, value: &str) -> Result<()> {
    // Used by the stores this build includes (none without the remote features).
    #[cfg_attr(
        not(any(feature = "aws", feature = "gcp", feature = "azure", feature = "http")),
        allow(unused_variables)
    )]
    let unknown = |store: &str, e: &dyn std::fmt::Display| {
        ZarrError::Option(format!("'{key}' is not a {store} option: {e}"))
    };
    if let Some(rest) = key.strip_prefix("retry.") {
        return parse_retry(rest, value).map(|_| ());
    }
    #[cfg(any(feature = "aws", feature = "gcp", feature = "azure", feature = "http"))]
    if let Some(rest) = key.strip_prefix("http.") {
        return rest
            .parse::<ClientConfigKey>()
            .map(|_| ())
            .map_err(|e| unknown("HTTP client", &e));
    }
    #[cfg(feature = "aws")]
    if let Some(rest) = key.strip_prefix("aws.") {
        return aws_key(rest).map(|_| ()).map_err(|e| unknown("S3", &e));
    }
    #[cfg(feature = "gcp")]
    if let Some(rest) = key.strip_prefix("gcp.") {
        return gcp_key(rest).map(|_| ()).map_err(|e| unknown("GCS", &e));
    }
    #[cfg(feature = "azure")]
    if let Some(rest) = key.strip_prefix("azure.") {
        return azure_key(rest)
            .map(|_| ())
            .map_err(|e| unknown("Azure", &e));
    }
    Err(ZarrError::Option(format!(
        "'{key}' configures a store this build does not include (built without its cargo feature)"
    )))
}

fn parse_duration(key: &str, value: &str) -> Result<Duration> {
    humantime::parse_duration(value.trim()).map_err(|e| {
        ZarrError::Option(format!(
            "{key} '{value}' is not a duration such as 30s or 500ms: {e}"
        ))
    })
}

// The three key parsers accept datafusion-cli's short names (`aws.region` → `region`) and
// object_store's full ones (`aws.aws_region`), by trying the key as given, then with the
// store's own prefix (`allow_http` is `aws_allow_http` to S3).
#[cfg(feature = "aws")]
fn aws_key(key: &str) -> object_store::Result<object_store::aws::AmazonS3ConfigKey> {
    key.parse().or_else(|_| format!("aws_{key}").parse())
}

#[cfg(feature = "gcp")]
fn gcp_key(key: &str) -> object_store::Result<object_store::gcp::GoogleConfigKey> {
    key.parse().or_else(|_| format!("google_{key}").parse())
}

#[cfg(feature = "azure")]
fn azure_key(key: &str) -> object_store::Result<object_store::azure::AzureConfigKey> {
    key.parse().or_else(|_| format!("azure_{key}").parse())
}

/// Whether `url`'s scheme names a remote store this build can build.
pub(crate) fn is_remote_scheme(scheme: &str) -> bool {
    matches!(
        scheme,
        "s3" | "s3a" | "gs" | "az" | "abfs" | "abfss" | "azure" | "adl" | "http" | "https"
    )
}

/// A build without remote stores reads local files only.
#[cfg(not(any(feature = "aws", feature = "gcp", feature = "azure", feature = "http")))]
pub(crate) fn build_store(url: &Url, _options: &StorageOptions) -> Result<Arc<dyn ObjectStore>> {
    Err(ZarrError::Location(format!(
        "'{}': this build of datafusion-zarr reads file:// only (built without the aws, gcp, \
         azure and http features)",
        redact(url)
    )))
}

/// Builds the object store for `url` (its scheme and bucket, container or host) from the
/// environment (`AWS_*`, `GOOGLE_*`, `AZURE_*`) and `options`, options taking precedence.
#[cfg(any(feature = "aws", feature = "gcp", feature = "azure", feature = "http"))]
pub(crate) fn build_store(url: &Url, options: &StorageOptions) -> Result<Arc<dyn ObjectStore>> {
    let shown = redact(url);
    let failed = |e: object_store::Error| {
        ZarrError::Location(format!(
            "'{shown}': cannot build its object store: {}",
            redact_text(&e.to_string(), options)
        ))
    };
    refuse_other_backends(url, &shown, options)?;
    let retry = options.retry()?;
    match url.scheme() {
        #[cfg(feature = "aws")]
        "s3" | "s3a" => {
            use object_store::aws::AmazonS3Builder;
            let mut builder = AmazonS3Builder::from_env()
                .with_url(url.as_str())
                .with_retry(retry);
            for (key, value) in options.under("aws.") {
                let key = aws_key(key).map_err(failed)?;
                builder = builder.with_config(key, value);
            }
            if asks_for_plain_http(options, "aws", "aws.endpoint") {
                builder = builder.with_allow_http(true);
            }
            Ok(Arc::new(builder.build().map_err(failed)?))
        }
        #[cfg(feature = "gcp")]
        "gs" => {
            use object_store::gcp::GoogleCloudStorageBuilder;
            let mut builder = GoogleCloudStorageBuilder::from_env()
                .with_url(url.as_str())
                .with_retry(retry);
            for (key, value) in options.under("gcp.") {
                let key = gcp_key(key).map_err(failed)?;
                builder = builder.with_config(key, value);
            }
            if asks_for_plain_http(options, "gcp", "gcp.base_url") {
                use object_store::gcp::GoogleConfigKey;
                builder = builder
                    .with_config(GoogleConfigKey::Client(ClientConfigKey::AllowHttp), "true");
            }
            Ok(Arc::new(builder.build().map_err(failed)?))
        }
        #[cfg(feature = "azure")]
        "az" | "abfs" | "abfss" | "azure" | "adl" => {
            use object_store::azure::MicrosoftAzureBuilder;
            let mut builder = MicrosoftAzureBuilder::from_env()
                .with_url(url.as_str())
                .with_retry(retry);
            for (key, value) in options.under("azure.") {
                let key = azure_key(key).map_err(failed)?;
                builder = builder.with_config(key, value);
            }
            if asks_for_plain_http(options, "azure", "azure.endpoint") {
                builder = builder.with_allow_http(true);
            }
            Ok(Arc::new(builder.build().map_err(failed)?))
        }
        #[cfg(feature = "http")]
        "http" | "https" => {
            http_store(&url.origin().ascii_serialization(), url, options, retry).map_err(failed)
        }
        scheme => Err(ZarrError::Location(format!(
            "'{shown}': no object store for the scheme '{scheme}'; this build reads {}",
            supported_schemes().join(", ")
        ))),
    }
}

/// An HTTP store whose requests go to `base` and below, with `options`' client settings.
#[cfg(feature = "http")]
fn http_store(
    base: &str,
    url: &Url,
    options: &StorageOptions,
    retry: object_store::RetryConfig,
) -> std::result::Result<Arc<dyn ObjectStore>, object_store::Error> {
    use object_store::ClientOptions;
    use object_store::http::HttpBuilder;
    let mut client = ClientOptions::new().with_allow_http(url.scheme() == "http");
    for (key, value) in options.under("http.") {
        let key: ClientConfigKey = key.parse()?;
        client = client.with_config(key, value);
    }
    let builder = HttpBuilder::new()
        .with_url(base)
        .with_client_options(client)
        .with_retry(retry);
    Ok(Arc::new(builder.build()?))
}

/// The HTML index page an HTTP server serves for the directory `directory` (its URL ends in
/// `/`; a redirect is followed), at most `limit` bytes; `None` when there is none (an error
/// status, a page past the limit, a failed request). object_store's HTTP client cannot read
/// it: it follows no redirect and wants a Content-Length the page is sent without.
#[cfg(feature = "http")]
pub(crate) async fn http_directory_index(
    directory: &Url,
    options: &StorageOptions,
    limit: u64,
) -> Option<Vec<u8>> {
    let insecure = options
        .get("http.allow_invalid_certificates")
        .is_some_and(|v| v.eq_ignore_ascii_case("true"));
    let client = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(30))
        .danger_accept_invalid_certs(insecure)
        .build()
        .ok()?;
    let mut response = client.get(directory.as_str()).send().await.ok()?;
    if !response.status().is_success() {
        return None;
    }
    let mut page = Vec::new();
    while let Some(piece) = response.chunk().await.ok()? {
        page.extend_from_slice(&piece);
        if page.len() as u64 > limit {
            return None;
        }
    }
    Some(page)
}

/// A build without the `http` feature has no HTTP stores, so no directory to index.
#[cfg(not(feature = "http"))]
pub(crate) async fn http_directory_index(
    _directory: &Url,
    _options: &StorageOptions,
    _limit: u64,
) -> Option<Vec<u8>> {
    None
}

/// Options for another kind of store than `url`'s are refused: `gcp.*` on an `s3://` location
/// was neither used nor reported, and the S3 client went looking for credentials elsewhere.
/// `retry.*` applies to every remote store.
#[cfg(any(feature = "aws", feature = "gcp", feature = "azure", feature = "http"))]
fn refuse_other_backends(url: &Url, shown: &str, options: &StorageOptions) -> Result<()> {
    let own = match url.scheme() {
        "s3" | "s3a" => "aws",
        "gs" => "gcp",
        "az" | "abfs" | "abfss" | "azure" | "adl" => "azure",
        "http" | "https" => "http",
        _ => return Ok(()),
    };
    for key in options.keys() {
        let prefix = key.split('.').next().unwrap_or_default();
        let schemes = match prefix {
            "aws" => "s3://",
            "gcp" => "gs://",
            "azure" => "az://, abfs:// and abfss://",
            "http" => "http:// and https://",
            _ => continue,
        };
        if prefix != own {
            return Err(ZarrError::Option(format!(
                "'{key}' configures {schemes} stores, not '{shown}'"
            )));
        }
    }
    Ok(())
}

/// Whether `endpoint` was typed with `http://` (MinIO, moto, an emulator, a proxy) and
/// `{store}.allow_http` left unset: the user asks for plain HTTP.
#[cfg(any(feature = "aws", feature = "gcp", feature = "azure"))]
fn asks_for_plain_http(options: &StorageOptions, store: &str, endpoint: &str) -> bool {
    options
        .get(endpoint)
        .is_some_and(|e| e.starts_with("http://"))
        && options.get(&format!("{store}.allow_http")).is_none()
}

/// The URL schemes this build reads.
pub fn supported_schemes() -> Vec<&'static str> {
    let mut schemes = vec!["file://"];
    if cfg!(feature = "aws") {
        schemes.push("s3://");
    }
    if cfg!(feature = "gcp") {
        schemes.push("gs://");
    }
    if cfg!(feature = "azure") {
        schemes.extend(["az://", "abfs://"]);
    }
    if cfg!(feature = "http") {
        schemes.extend(["http://", "https://"]);
    }
    schemes
}

/// `url` without user name, password, query or fragment, and without a trailing `/`: what
/// errors, plans and file metadata show (a SAS token or a password never appears).
pub(crate) fn redact(url: &Url) -> String {
    let mut shown = url.clone();
    // Both only fail for URLs that cannot have credentials (`data:`), which have none. In
    // `abfs://container@account…` the user is the container, which stays.
    if !matches!(url.scheme(), "abfs" | "abfss" | "wasb" | "wasbs") {
        let _ = shown.set_username("");
    }
    let _ = shown.set_password(None);
    shown.set_query(None);
    shown.set_fragment(None);
    let s = shown.to_string();
    s.strip_suffix('/').map(str::to_string).unwrap_or(s)
}

/// A location (a path or URL) as errors, plans and progress displays show it: without user,
/// password, query or fragment.
pub fn shown_location(location: &str) -> String {
    match Url::parse(location) {
        Ok(url) => redact(&url),
        Err(_) => redact_unparsed(location),
    }
}

/// A location as it was typed, for the error that says it is not a URL: with no URL to take
/// apart, everything between `://` and the last `@` (a user and password, which may hold `/`,
/// `:`, `?`, `#` or `@`) and everything after a `?` or `#` (a query, a fragment) are replaced
/// by `***`.
pub(crate) fn redact_unparsed(location: &str) -> String {
    let (head, rest) = match location.find("://") {
        Some(i) => location.split_at(i + 3),
        None => ("", location),
    };
    let (user, rest) = match rest.rfind('@') {
        Some(at) => ("***@", &rest[at + 1..]),
        None => ("", rest),
    };
    match rest.find(['?', '#']) {
        Some(cut) => format!("{head}{user}{}{}***", &rest[..cut], &rest[cut..cut + 1]),
        None => format!("{head}{user}{rest}"),
    }
}

/// `word` with the user information of a URL in it replaced by `***@`: everything between
/// `://` and the word's last `@` (a password may hold `/`; a path with an `@` loses its host
/// too, which an error can spare).
fn without_userinfo(word: &str) -> String {
    let Some(start) = word.find("://").map(|i| i + 3) else {
        return word.to_string();
    };
    match word[start..].rfind('@') {
        Some(at) => format!("{}***@{}", &word[..start], &word[start + at + 1..]),
        None => word.to_string(),
    }
}

/// `text` (an object store's error) without credentials: the user information and query of
/// every URL in it (a password in an endpoint, an Azure SAS token) and the value of every
/// secret storage option (a key, secret, token, password or SAS) are replaced by `***`.
/// Endpoints, regions and flags stay readable.
pub(crate) fn redact_text(text: &str, options: &StorageOptions) -> String {
    let mut out = String::with_capacity(text.len());
    for (i, word) in text.split(' ').enumerate() {
        if i > 0 {
            out.push(' ');
        }
        let word = without_userinfo(word);
        match word.split_once('?') {
            Some((base, _)) if base.contains("://") => {
                out.push_str(base);
                out.push_str("?***");
            }
            _ => out.push_str(&word),
        }
    }
    for key in options.keys() {
        let secret = ["key", "secret", "token", "password", "sas"]
            .iter()
            .any(|word| key.contains(word));
        if let Some(value) = options.get(key)
            && secret
            && !value.is_empty()
        {
            out = out.replace(value, "***");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_lose_secrets_and_url_queries_but_keep_endpoints() {
        let mut options = StorageOptions::default();
        options.set("azure.access_key", "c2VjcmV0").unwrap();
        options
            .set("azure.endpoint", "http://127.0.0.1:10000/acct")
            .unwrap();
        options.set("azure.skip_signature", "true").unwrap();
        let text = "GET http://127.0.0.1:10000/acct/c/k?sig=abc&se=1 failed: key c2VjcmV0 is true";
        let shown = redact_text(text, &options);
        assert_eq!(
            shown,
            "GET http://127.0.0.1:10000/acct/c/k?*** failed: key *** is true"
        );
        // A password in an endpoint, and in a URL object_store could not take apart.
        let text = "Error performing GET http://u:p4ss@127.0.0.1:1/bkt/x/zarr.json: \
                    pattern for scheme: az://user:s3/cret@c/x/";
        assert_eq!(
            redact_text(text, &options),
            "Error performing GET http://***@127.0.0.1:1/bkt/x/zarr.json: \
             pattern for scheme: az://***@c/x/"
        );
    }

    #[test]
    fn shown_urls_keep_an_abfs_container_and_lose_credentials() {
        for (url, shown) in [
            (
                "abfs://c@acct.dfs.core.windows.net/x/?sig=s3cret",
                "abfs://c@acct.dfs.core.windows.net/x",
            ),
            (
                "abfss://c:s3cret@acct.dfs.core.windows.net/x",
                "abfss://c@acct.dfs.core.windows.net/x",
            ),
            ("s3://user:s3cret@bkt/x/", "s3://bkt/x"),
            ("https://u:s3cret@h/x.zarr?token=s3cret", "https://h/x.zarr"),
        ] {
            assert_eq!(redact(&Url::parse(url).unwrap()), shown);
        }
    }

    #[test]
    fn options_for_another_kind_of_store_are_refused() {
        let mut options = StorageOptions::default();
        options.set("retry.max_retries", "0").unwrap();
        options.set("aws.region", "us-east-1").unwrap();
        let s3 = Url::parse("s3://bkt/x/").unwrap();
        assert!(refuse_other_backends(&s3, "s3://bkt/x", &options).is_ok());
        options.set("gcp.service_account_key", "{}").unwrap();
        let e = refuse_other_backends(&s3, "s3://bkt/x", &options).unwrap_err();
        assert!(
            e.to_string()
                .contains("'gcp.service_account_key' configures gs:// stores, not 's3://bkt/x'"),
            "{e}"
        );
    }

    #[test]
    fn unparsed_locations_lose_user_information_and_queries() {
        for (typed, shown) in [
            (
                "http://user:s3cret@127.0.0.1:99999/x.zarr",
                "http://***@127.0.0.1:99999/x.zarr",
            ),
            ("s3://user:s3/c@et@/x", "s3://***@/x"),
            ("https://h/x.zarr?sig=s3cret", "https://h/x.zarr?***"),
            ("http://user:pa?ss@host/x", "http://***@host/x"),
            ("http://user:pa#ss@host/x#frag", "http://***@host/x#***"),
            ("file:///tmp/x", "file:///tmp/x"),
        ] {
            assert_eq!(redact_unparsed(typed), shown);
        }
    }

    #[test]
    fn datafusion_cli_names_and_object_store_names_are_accepted() {
        let mut o = StorageOptions::default();
        for key in [
            "aws.access_key_id",
            "aws.secret_access_key",
            "aws.session_token",
            "aws.region",
            "aws.endpoint",
            "aws.allow_http",
            "aws.skip_signature",
            "aws.aws_region",
            "gcp.service_account_path",
            "gcp.service_account_key",
            "gcp.base_url",
            "azure.account_name",
            "azure.access_key",
            "azure.endpoint",
            "azure.skip_signature",
            "http.timeout",
            "retry.max_retries",
        ] {
            let value = if key == "retry.max_retries" { "3" } else { "x" };
            o.set(key, value).unwrap_or_else(|e| panic!("{key}: {e}"));
        }
        assert!(o.set("retry.timeout", "250ms").is_ok());
    }

    #[test]
    fn unknown_keys_and_bad_values_are_errors_that_name_the_key() {
        let mut o = StorageOptions::default();
        let e = o.set("aws.colour", "red").unwrap_err().to_string();
        assert!(e.contains("'aws.colour' is not a S3 option"), "{e}");
        assert!(o.set("retry.max_retries", "many").is_err());
        assert!(o.set("retry.timeout", "soon").is_err());
        assert!(o.set("retry.backoff", "1").is_err());
        assert!(o.is_empty());
    }

    #[test]
    fn debug_shows_keys_never_values() {
        let mut o = StorageOptions::default();
        o.set("aws.secret_access_key", "s3cr3t-value").unwrap();
        let shown = format!("{o:?}");
        assert!(shown.contains("aws.secret_access_key"), "{shown}");
        assert!(!shown.contains("s3cr3t"), "{shown}");
    }
}
