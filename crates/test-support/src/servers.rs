//! Real servers for the remote-store tests, started once per test process on 127.0.0.1 (free
//! ports) and stopped when it ends: nginx (HTTP with range requests and one-level WebDAV
//! listing), moto (S3), fake-gcs-server (GCS) and azurite (Azure Blob), each holding the test
//! data under the same keys. `tools/install-test-servers` installs them into `.servers/`.
pub mod proxy;

use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt};

/// The bucket (S3, GCS) or container (Azure) holding the data.
pub const BUCKET: &str = "zarr";
/// Azurite's well-known development account and key.
pub const AZURE_ACCOUNT: &str = "devstoreaccount1";
pub const AZURE_KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";
/// The credentials moto accepts (it checks none).
pub const S3_KEY: &str = "testing";

/// Ports of the running servers; each serves `tests/data` (the corpus and the fixtures) under
/// the keys `corpus/…` and `fixtures/…`.
#[derive(Debug, Clone, Copy)]
pub struct Servers {
    pub http: u16,
    pub s3: u16,
    pub gcs: u16,
    pub azure: u16,
}

pub use crate::root;

/// The servers, started on first use.
pub fn servers() -> Servers {
    // A failure is kept too, so that the other tests report it at once instead of retrying.
    static SERVERS: OnceLock<Result<Servers, String>> = OnceLock::new();
    let started = SERVERS.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel();
        // The servers are children of this thread, which lives as long as the process: they
        // get SIGTERM when it ends (PR_SET_PDEATHSIG follows the thread that spawned them).
        std::thread::spawn(move || {
            let started = start_all();
            let ports = started.as_ref().map(|(s, _)| *s).map_err(|e| e.clone());
            tx.send(ports).expect("the test thread waits");
            let _keep = started;
            loop {
                std::thread::park();
            }
        });
        rx.recv()
            .unwrap_or_else(|_| Err("the server thread ended".into()))
    });
    match started {
        Ok(s) => *s,
        Err(e) => panic!("starting the test servers failed: {e}"),
    }
}

/// Table options that reach each store, for `CREATE EXTERNAL TABLE … OPTIONS` or `read_zarr`.
pub fn options(scheme: &str, s: &Servers) -> Vec<(String, String)> {
    let pairs: Vec<(&str, String)> = match scheme {
        "s3" => vec![
            ("aws.endpoint", format!("http://127.0.0.1:{}", s.s3)),
            ("aws.access_key_id", S3_KEY.into()),
            ("aws.secret_access_key", S3_KEY.into()),
            ("aws.region", "us-east-1".into()),
        ],
        "gs" => vec![
            ("gcp.base_url", format!("http://127.0.0.1:{}", s.gcs)),
            ("gcp.service_account_key", gcs_key()),
        ],
        "az" => vec![
            (
                "azure.endpoint",
                format!("http://127.0.0.1:{}/{AZURE_ACCOUNT}", s.azure),
            ),
            ("azure.account_name", AZURE_ACCOUNT.into()),
            ("azure.access_key", AZURE_KEY.into()),
        ],
        _ => vec![],
    };
    pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

/// The location of `key` (`corpus/03_1d_gzip/data.zarr`) in the store of `scheme`.
pub fn location(scheme: &str, s: &Servers, key: &str) -> String {
    match scheme {
        "http" => format!("http://127.0.0.1:{}/{key}", s.http),
        "file" => root().join("tests/data").join(key).display().to_string(),
        other => format!("{other}://{BUCKET}/{key}"),
    }
}

/// A service account for fake-gcs-server: no OAuth, empty key.
pub fn gcs_key() -> String {
    r#"{"private_key": "", "private_key_id": "", "client_email": "", "disable_oauth": true}"#
        .to_string()
}

/// Where `tools/install-test-servers` put the servers.
fn bin(name: &str) -> Result<PathBuf, String> {
    let path = root().join(".servers/bin").join(name);
    if path.exists() {
        Ok(path)
    } else {
        Err(format!(
            "{} is missing: run tools/install-test-servers first",
            path.display()
        ))
    }
}

/// A server process, terminated on drop.
pub struct Server {
    child: Child,
    _dir: Option<tempfile::TempDir>,
}

impl Drop for Server {
    fn drop(&mut self) {
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGTERM);
        }
        let _ = self.child.wait();
    }
}

/// A free port on 127.0.0.1.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

fn spawn(
    mut command: Command,
    port: u16,
    dir: Option<tempfile::TempDir>,
) -> Result<Server, String> {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // SAFETY: prctl is async-signal-safe; the closure allocates nothing.
    unsafe {
        command.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
            Ok(())
        });
    }
    let program = format!("{:?}", command.get_program());
    let child = command
        .spawn()
        .map_err(|e| format!("starting {program}: {e}"))?;
    let server = Server { child, _dir: dir };
    wait_for_port(port, Duration::from_secs(60))
        .map_err(|e| format!("{program} on port {port}: {e}"))?;
    Ok(server)
}

fn wait_for_port(port: u16, timeout: Duration) -> Result<(), String> {
    let start = Instant::now();
    while start.elapsed() < timeout {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Err(format!("not listening after {timeout:?}"))
}

type Started = (Servers, Vec<Server>);

fn start_all() -> Result<Started, String> {
    let data = root().join("tests/data");
    let mut running = Vec::new();
    let http = free_port();
    running.push(nginx(&data, http)?);
    let s3 = free_port();
    running.push(moto(s3)?);
    let gcs = free_port();
    running.push(fake_gcs(&data, gcs)?);
    let azure = free_port();
    running.push(azurite(azure)?);
    let servers = Servers {
        http,
        s3,
        gcs,
        azure,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(seed(&servers, &data))?;
    Ok((servers, running))
}

/// nginx serving `root` with range requests and WebDAV PROPFIND (one level).
pub fn nginx(root: &Path, port: u16) -> Result<Server, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let prefix = dir.path().display().to_string();
    let user = if unsafe { libc::geteuid() } == 0 {
        "user root;"
    } else {
        ""
    };
    let conf = include_str!("servers/nginx.conf")
        .replace("{user}", user)
        .replace("{prefix}", &prefix)
        .replace("{port}", &port.to_string())
        .replace("{root}", &root.display().to_string());
    let conf_path = dir.path().join("nginx.conf");
    std::fs::write(&conf_path, conf).map_err(|e| e.to_string())?;
    let nginx = which("nginx").ok_or("nginx is missing: run tools/install-test-servers first")?;
    let mut command = Command::new(nginx);
    command.arg("-p").arg(dir.path()).arg("-c").arg(&conf_path);
    spawn(command, port, Some(dir))
}

fn which(program: &str) -> Option<PathBuf> {
    for dir in [
        "/usr/sbin",
        "/usr/bin",
        "/usr/local/sbin",
        "/usr/local/bin",
        "/sbin",
    ] {
        let p = Path::new(dir).join(program);
        if p.exists() {
            return Some(p);
        }
    }
    None
}

fn moto(port: u16) -> Result<Server, String> {
    let mut command = Command::new(bin("moto_server")?);
    command.args(["-H", "127.0.0.1", "-p", &port.to_string()]);
    spawn(command, port, None)
}

fn fake_gcs(data: &Path, port: u16) -> Result<Server, String> {
    // fake-gcs-server loads `SEED/<bucket>/<object key>` at start.
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let bucket = dir.path().join(BUCKET);
    copy_tree(data, &bucket).map_err(|e| format!("seeding fake-gcs-server: {e}"))?;
    let mut command = Command::new(bin("fake-gcs-server")?);
    command
        .args(["-scheme", "http", "-host", "127.0.0.1", "-port"])
        .arg(port.to_string())
        .args(["-backend", "memory", "-data"])
        .arg(dir.path())
        .arg("-public-host")
        .arg(format!("127.0.0.1:{port}"))
        .args(["-log-level", "error"]);
    spawn(command, port, Some(dir))
}

fn azurite(port: u16) -> Result<Server, String> {
    // In memory; its debug log and extent files would go to the working directory, so run
    // it in a temporary one.
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let mut command = Command::new(bin("azurite-blob")?);
    command
        .args(["--blobHost", "127.0.0.1", "--blobPort"])
        .arg(port.to_string())
        .args(["--inMemoryPersistence", "--silent"])
        .current_dir(dir.path());
    spawn(command, port, Some(dir))
}

fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

/// Every file below `dir`, as (key relative to `dir`, path).
pub fn files(dir: &Path) -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if let Ok(rel) = path.strip_prefix(dir) {
                out.push((rel.to_string_lossy().replace('\\', "/"), path));
            }
        }
    }
    out.sort();
    out
}

/// Creates the S3 bucket and the Azure container and uploads `data` to both (GCS was seeded
/// from a directory).
async fn seed(s: &Servers, data: &Path) -> Result<(), String> {
    // moto creates a bucket on an unsigned PUT.
    http_request(s.s3, "PUT", &format!("/{BUCKET}"), &[])?;
    azure_create_container(s.azure)?;
    let s3 = s3_store(s)?;
    let azure = azure_store(s)?;
    upload(&s3, data).await?;
    upload(&azure, data).await?;
    Ok(())
}

pub async fn upload(store: &Arc<dyn ObjectStore>, data: &Path) -> Result<(), String> {
    use futures::StreamExt;
    let puts = files(data).into_iter().map(|(key, path)| {
        let store = store.clone();
        async move {
            let bytes = std::fs::read(&path).map_err(|e| e.to_string())?;
            store
                .put(&ObjectPath::from(key.as_str()), bytes.into())
                .await
                .map(|_| ())
                .map_err(|e| format!("uploading {key}: {e}"))
        }
    });
    let results: Vec<Result<(), String>> = futures::stream::iter(puts)
        .buffer_unordered(16)
        .collect()
        .await;
    results.into_iter().collect()
}

pub fn s3_store(s: &Servers) -> Result<Arc<dyn ObjectStore>, String> {
    object_store::aws::AmazonS3Builder::new()
        .with_bucket_name(BUCKET)
        .with_endpoint(format!("http://127.0.0.1:{}", s.s3))
        .with_allow_http(true)
        .with_access_key_id(S3_KEY)
        .with_secret_access_key(S3_KEY)
        .with_region("us-east-1")
        .build()
        .map(|s| Arc::new(s) as Arc<dyn ObjectStore>)
        .map_err(|e| e.to_string())
}

pub fn azure_store(s: &Servers) -> Result<Arc<dyn ObjectStore>, String> {
    object_store::azure::MicrosoftAzureBuilder::new()
        .with_container_name(BUCKET)
        .with_account(AZURE_ACCOUNT)
        .with_access_key(AZURE_KEY)
        .with_endpoint(format!("http://127.0.0.1:{}/{AZURE_ACCOUNT}", s.azure))
        .with_allow_http(true)
        .build()
        .map(|s| Arc::new(s) as Arc<dyn ObjectStore>)
        .map_err(|e| e.to_string())
}

/// One HTTP/1.1 request on a fresh connection; returns the status code.
pub fn http_request(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, String)],
) -> Result<u16, String> {
    use std::io::{Read, Write};
    let mut stream = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 0\r\nConnection: close\r\n"
    );
    for (k, v) in headers {
        request.push_str(&format!("{k}: {v}\r\n"));
    }
    request.push_str("\r\n");
    stream
        .write_all(request.as_bytes())
        .map_err(|e| e.to_string())?;
    let mut response = Vec::new();
    stream
        .read_to_end(&mut response)
        .map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&response);
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| format!("no HTTP status in {text:?}"))?;
    if !(200..300).contains(&status) {
        return Err(format!("{method} {path}: {text}"));
    }
    Ok(status)
}

/// Creates the Azure container with a Shared Key signed request (object_store creates none).
fn azure_create_container(port: u16) -> Result<(), String> {
    use base64::Engine;
    let date = chrono::Utc::now()
        .format("%a, %d %b %Y %H:%M:%S GMT")
        .to_string();
    let version = "2021-08-06";
    // The Shared Key string to sign of a PUT without body or standard headers; the canonical
    // resource of a path-style (emulator) URL repeats the account.
    let to_sign = format!(
        "PUT\n\n\n\n\n\n\n\n\n\n\n\nx-ms-date:{date}\nx-ms-version:{version}\n/{AZURE_ACCOUNT}/{AZURE_ACCOUNT}/{BUCKET}\nrestype:container"
    );
    let key = base64::engine::general_purpose::STANDARD
        .decode(AZURE_KEY)
        .map_err(|e| e.to_string())?;
    let tag = ring::hmac::sign(
        &ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &key),
        to_sign.as_bytes(),
    );
    let signature = base64::engine::general_purpose::STANDARD.encode(tag.as_ref());
    http_request(
        port,
        "PUT",
        &format!("/{AZURE_ACCOUNT}/{BUCKET}?restype=container"),
        &[
            ("x-ms-date", date),
            ("x-ms-version", version.to_string()),
            (
                "Authorization",
                format!("SharedKey {AZURE_ACCOUNT}:{signature}"),
            ),
        ],
    )
    .map(|_| ())
}

/// A client of fake-gcs-server's bucket (reads and listings; for writes, see
/// [`gcs_store_at`] and `proxy::Proxy::start_gcs_writes`).
pub fn gcs_store(s: &Servers) -> Result<Arc<dyn ObjectStore>, String> {
    gcs_store_at(s.gcs)
}

/// A client of the bucket of a GCS server on 127.0.0.1:`port` (fake-gcs-server, or a proxy in
/// front of it).
pub fn gcs_store_at(port: u16) -> Result<Arc<dyn ObjectStore>, String> {
    use object_store::gcp::{GoogleCloudStorageBuilder, GoogleConfigKey};
    GoogleCloudStorageBuilder::new()
        .with_bucket_name(BUCKET)
        .with_service_account_key(gcs_key())
        .with_config(GoogleConfigKey::BaseUrl, format!("http://127.0.0.1:{port}"))
        .with_client_options(object_store::ClientOptions::new().with_allow_http(true))
        .build()
        .map(|s| Arc::new(s) as Arc<dyn ObjectStore>)
        .map_err(|e| e.to_string())
}

/// A client of the bucket or container of `scheme` (`s3`, `gs`, `az`) on the test servers,
/// to see what a test wrote there.
pub fn object_store_of(scheme: &str, s: &Servers) -> Result<Arc<dyn ObjectStore>, String> {
    match scheme {
        "s3" => s3_store(s),
        "gs" => gcs_store(s),
        "az" => azure_store(s),
        other => Err(format!("no test object store for the scheme '{other}'")),
    }
}

/// Every object below `prefix` (a key without a trailing `/`), as its key relative to `prefix`
/// and its bytes, in key order (one deleted between the listing and its reading is left out).
pub async fn objects_below(
    store: &Arc<dyn ObjectStore>,
    prefix: &str,
) -> Result<std::collections::BTreeMap<String, Vec<u8>>, String> {
    use futures::TryStreamExt;
    let root = ObjectPath::from(prefix);
    let listed: Vec<object_store::ObjectMeta> = store
        .list(Some(&root))
        .try_collect()
        .await
        .map_err(|e| format!("listing {prefix}: {e}"))?;
    let mut out = std::collections::BTreeMap::new();
    for meta in listed {
        let key = meta.location.as_ref().to_string();
        let relative = key
            .strip_prefix(&format!("{}/", root.as_ref()))
            .unwrap_or(&key)
            .to_string();
        let bytes = match store.get(&meta.location).await {
            Ok(got) => got
                .bytes()
                .await
                .map_err(|e| format!("reading {key}: {e}"))?,
            // Deleted since it was listed (a cleanup under way): not there.
            Err(object_store::Error::NotFound { .. }) => continue,
            Err(e) => return Err(format!("reading {key}: {e}")),
        };
        out.insert(relative, bytes.to_vec());
    }
    Ok(out)
}
