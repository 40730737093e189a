//! An HTTP/1.1 proxy in front of a test server, for what no server package offers: it counts
//! requests and response bytes, and injects faults: a delay on every response (latency),
//! error statuses, responses cut midway and connections closed before any answer.
//!
//! Each client request is forwarded as HTTP/1.0 on a fresh upstream connection (so the answer
//! ends at EOF and never comes chunked), then answered to the client with a Content-Length on
//! its kept-alive connection.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What the proxy does to requests whose target contains `path`, the first `times` times.
#[derive(Debug, Clone)]
pub struct Fault {
    pub path: String,
    pub times: usize,
    pub kind: FaultKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    /// Answer with this status and an empty body.
    Status(u16),
    /// Send the head and half the body, then close.
    Cut,
    /// Close the connection without answering.
    Close,
}

/// One request the proxy saw.
#[derive(Debug, Clone)]
pub struct Logged {
    pub method: String,
    pub target: String,
    pub range: Option<String>,
    pub status: u16,
    /// Body bytes sent to the client.
    pub bytes: usize,
}

/// A fault by method (writes: `PUT`, `POST`, `DELETE`): of the requests whose method is one
/// of `methods` (any method when empty) and whose target contains `path`, the first `skip` pass,
/// and the next `times` get `kind`. `skip: 3, times: usize::MAX` refuses every such request
/// after the third.
#[derive(Debug, Clone)]
pub struct MethodFault {
    pub methods: Vec<String>,
    pub path: String,
    pub skip: usize,
    pub times: usize,
    pub kind: FaultKind,
}

impl MethodFault {
    /// Every request of `methods` after the first `skip` of them gets `kind`.
    pub fn after(methods: &[&str], skip: usize, kind: FaultKind) -> Self {
        Self {
            methods: methods.iter().map(|m| m.to_string()).collect(),
            path: String::new(),
            skip,
            times: usize::MAX,
            kind,
        }
    }
}

#[derive(Default)]
struct State {
    delay: Mutex<Duration>,
    faults: Mutex<Vec<Fault>>,
    method_faults: Mutex<Vec<MethodFault>>,
    log: Mutex<Vec<Logged>>,
    /// Translate GCS XML-API writes for fake-gcs-server (see [`Proxy::start_gcs_writes`]).
    gcs_writes: bool,
}

/// A running proxy; it stops with the test process.
pub struct Proxy {
    pub port: u16,
    state: Arc<State>,
}

impl Proxy {
    /// Starts a proxy to `127.0.0.1:upstream` on a free port, on its own thread.
    pub fn start(upstream: u16) -> Proxy {
        Self::start_with(upstream, State::default())
    }

    /// A proxy in front of fake-gcs-server that makes object_store's GCS writes work there:
    /// object_store writes through the XML API (`PUT /bucket/object`, `PUT` with
    /// `x-goog-copy-source`, `DELETE /bucket/object`), which fake-gcs-server serves only for
    /// signed URLs, if at all. They are sent as the JSON API's media upload, `copyTo` and
    /// delete, and a write's answer gets the `ETag` header object_store wants. Reads pass
    /// as they are (with the server's own `Host`, which its routes match).
    pub fn start_gcs_writes(upstream: u16) -> Proxy {
        Self::start_with(
            upstream,
            State {
                gcs_writes: true,
                ..State::default()
            },
        )
    }

    fn start_with(upstream: u16, state: State) -> Proxy {
        let state = Arc::new(state);
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
        let port = listener.local_addr().expect("bound").port();
        listener.set_nonblocking(true).expect("non-blocking");
        let shared = state.clone();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime");
            runtime.block_on(async move {
                let listener = TcpListener::from_std(listener).expect("a tokio listener");
                while let Ok((client, _)) = listener.accept().await {
                    let state = shared.clone();
                    tokio::spawn(async move {
                        let _ = serve(client, upstream, state).await;
                    });
                }
            });
        });
        Proxy { port, state }
    }

    /// Delays every response by `delay`.
    pub fn set_delay(&self, delay: Duration) {
        *self.state.delay.lock().unwrap() = delay;
    }

    /// Adds a fault.
    pub fn add_fault(&self, fault: Fault) {
        self.state.faults.lock().unwrap().push(fault);
    }

    /// Adds a fault by method.
    pub fn add_method_fault(&self, fault: MethodFault) {
        self.state.method_faults.lock().unwrap().push(fault);
    }

    /// Removes every fault (by path and by method): requests pass again.
    pub fn clear_faults(&self) {
        self.state.faults.lock().unwrap().clear();
        self.state.method_faults.lock().unwrap().clear();
    }

    /// The requests seen so far (without clearing the log).
    pub fn log(&self) -> Vec<Logged> {
        self.state.log.lock().unwrap().clone()
    }

    /// The requests seen so far, and clears the log.
    pub fn take_log(&self) -> Vec<Logged> {
        std::mem::take(&mut *self.state.log.lock().unwrap())
    }
}

/// Takes the fault that applies to `target`, if any, using up one of its times.
fn take_fault(state: &State, target: &str) -> Option<FaultKind> {
    let mut faults = state.faults.lock().unwrap();
    let fault = faults
        .iter_mut()
        .find(|f| f.times > 0 && target.contains(&f.path))?;
    fault.times -= 1;
    Some(fault.kind)
}

/// Takes the method fault that applies to `method` on `target`, if any: each matching fault
/// counts the request, passing it while its `skip` lasts.
fn take_method_fault(state: &State, method: &str, target: &str) -> Option<FaultKind> {
    let mut faults = state.method_faults.lock().unwrap();
    for fault in faults.iter_mut() {
        let applies = (fault.methods.is_empty()
            || fault.methods.iter().any(|m| m.eq_ignore_ascii_case(method)))
            && target.contains(&fault.path);
        if !applies {
            continue;
        }
        if fault.skip > 0 {
            fault.skip -= 1;
            continue;
        }
        if fault.times > 0 {
            fault.times -= 1;
            return Some(fault.kind);
        }
    }
    None
}

async fn serve(mut client: TcpStream, upstream: u16, state: Arc<State>) -> std::io::Result<()> {
    // Each answer goes out at once: with Nagle's algorithm a small answer waited for the
    // client's delayed ACK (about 40 ms), a delay no real server adds and the bench counted.
    client.set_nodelay(true)?;
    let mut buffer = Vec::new();
    loop {
        // The request head.
        let head_end = loop {
            if let Some(i) = find(&buffer, b"\r\n\r\n") {
                break i + 4;
            }
            let mut chunk = [0u8; 8192];
            let n = client.read(&mut chunk).await?;
            if n == 0 {
                return Ok(());
            }
            buffer.extend_from_slice(&chunk[..n]);
        };
        let head = String::from_utf8_lossy(&buffer[..head_end]).to_string();
        let mut lines = head.split("\r\n");
        let request_line = lines.next().unwrap_or_default().to_string();
        let mut parts = request_line.split_whitespace();
        let method = parts.next().unwrap_or_default().to_string();
        let target = parts.next().unwrap_or_default().to_string();
        let mut headers: Vec<(String, String)> = lines
            .filter(|l| !l.is_empty())
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
            .collect();
        let header = |name: &str| {
            headers
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.clone())
        };
        let body_len: usize = header("content-length")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let range = header("range");
        while buffer.len() < head_end + body_len {
            let mut chunk = [0u8; 65536];
            let n = client.read(&mut chunk).await?;
            if n == 0 {
                return Ok(());
            }
            buffer.extend_from_slice(&chunk[..n]);
        }
        let mut body: Vec<u8> = buffer[head_end..head_end + body_len].to_vec();
        buffer.drain(..head_end + body_len);

        let fault =
            take_fault(&state, &target).or_else(|| take_method_fault(&state, &method, &target));
        let delay = *state.delay.lock().unwrap();
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        let log = |status: u16, bytes: usize| {
            state.log.lock().unwrap().push(Logged {
                method: method.clone(),
                target: target.clone(),
                range: range.clone(),
                status,
                bytes,
            });
        };
        match fault {
            Some(FaultKind::Close) => {
                log(0, 0);
                return Ok(());
            }
            Some(FaultKind::Status(status)) => {
                log(status, 0);
                let answer = format!(
                    "HTTP/1.1 {status} Injected\r\nContent-Length: 0\r\nConnection: keep-alive\r\n\r\n"
                );
                client.write_all(answer.as_bytes()).await?;
                continue;
            }
            _ => {}
        }

        // Forward as HTTP/1.0 on a fresh connection; the answer ends at EOF.
        headers.retain(|(k, _)| {
            !k.eq_ignore_ascii_case("connection") && !k.eq_ignore_ascii_case("keep-alive")
        });
        let (mut forward_method, mut forward_target) = (method.clone(), target.clone());
        let mut gcs_write = false;
        if state.gcs_writes {
            for (k, v) in headers.iter_mut() {
                if k.eq_ignore_ascii_case("host") {
                    *v = format!("127.0.0.1:{upstream}");
                }
            }
            if let Some((m, t)) = gcs_json_write(&method, &target, &mut headers) {
                (forward_method, forward_target) = (m, t);
                gcs_write = true;
            }
            if forward_target.contains("uploadType=multipart") {
                body = multipart_body(&forward_target, &body, &mut headers);
            }
        }
        let mut forward = format!("{forward_method} {forward_target} HTTP/1.0\r\n");
        for (k, v) in &headers {
            forward.push_str(&format!("{k}: {v}\r\n"));
        }
        forward.push_str("Connection: close\r\n\r\n");
        let mut up = TcpStream::connect(("127.0.0.1", upstream)).await?;
        up.set_nodelay(true)?;
        let mut request = forward.into_bytes();
        request.extend_from_slice(&body);
        up.write_all(&request).await?;
        let mut response = Vec::new();
        up.read_to_end(&mut response).await?;
        let Some(i) = find(&response, b"\r\n\r\n") else {
            return Ok(());
        };
        let (response_head, response_body) = (&response[..i], &response[i + 4..]);
        let response_head = String::from_utf8_lossy(response_head).to_string();
        let mut lines = response_head.split("\r\n");
        let status_line = lines.next().unwrap_or_default();
        let status: u16 = status_line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let reason = status_line.splitn(3, ' ').nth(2).unwrap_or("");
        let mut out = format!("HTTP/1.1 {status} {reason}\r\n");
        let mut declared_length = None;
        for line in lines {
            let Some((k, v)) = line.split_once(':') else {
                continue;
            };
            if k.eq_ignore_ascii_case("content-length") {
                declared_length = Some(v.trim().to_string());
                continue;
            }
            if k.eq_ignore_ascii_case("connection")
                || k.eq_ignore_ascii_case("keep-alive")
                || k.eq_ignore_ascii_case("transfer-encoding")
            {
                continue;
            }
            out.push_str(line);
            out.push_str("\r\n");
        }
        // A HEAD answer keeps the length it declared; others get the body's.
        let length = if method == "HEAD" {
            declared_length.unwrap_or_else(|| "0".into())
        } else {
            response_body.len().to_string()
        };
        if gcs_write
            && (200..300).contains(&status)
            && !response_head.to_ascii_lowercase().contains("\r\netag:")
        {
            // The JSON API answers with the object resource; the XML API's answer (which
            // object_store reads) has its ETag as a header.
            let resource = serde_json::from_slice::<serde_json::Value>(response_body).ok();
            let field = |name: &str| {
                resource
                    .as_ref()
                    .and_then(|v| v[name].as_str().map(str::to_string))
            };
            let etag = field("etag").unwrap_or_else(|| "none".into());
            out.push_str(&format!("ETag: \"{etag}\"\r\n"));
            // And its generation, which object_store's conditional update names.
            if let Some(generation) = field("generation") {
                out.push_str(&format!("x-goog-generation: {generation}\r\n"));
            }
        }
        out.push_str(&format!(
            "Content-Length: {length}\r\nConnection: keep-alive\r\n\r\n"
        ));
        if fault == Some(FaultKind::Cut) {
            let half = response_body.len() / 2;
            log(status, half);
            client.write_all(out.as_bytes()).await?;
            client.write_all(&response_body[..half]).await?;
            client.flush().await?;
            return Ok(());
        }
        log(status, response_body.len());
        let mut answer = out.into_bytes();
        answer.extend_from_slice(response_body);
        client.write_all(&answer).await?;
    }
}

/// The JSON-API request (method, target) of a GCS XML-API write of object_store (its object
/// name percent-encoded as one path segment), its headers adjusted; `None` for other requests.
fn gcs_json_write(
    method: &str,
    target: &str,
    headers: &mut Vec<(String, String)>,
) -> Option<(String, String)> {
    let (bucket, object) = target.strip_prefix('/')?.split_once('/')?;
    if object.is_empty() || object.contains('/') || object.contains('?') || bucket.contains('?') {
        return None;
    }
    let copy_source = headers
        .iter()
        .position(|(k, _)| k.eq_ignore_ascii_case("x-goog-copy-source"));
    // object_store's conditional puts (PutMode::Create and Update) as the JSON API's
    // precondition parameter.
    let condition = headers
        .iter()
        .position(|(k, _)| k.eq_ignore_ascii_case("x-goog-if-generation-match"))
        .map(|i| headers.remove(i).1)
        .map(|generation| format!("ifGenerationMatch={}", generation.trim()));
    let with_condition = |target: String| match &condition {
        Some(c) if target.contains('?') => format!("{target}&{c}"),
        Some(c) => format!("{target}?{c}"),
        None => target,
    };
    match (method, copy_source) {
        ("PUT", Some(i)) => {
            let (_, source) = headers.remove(i);
            let (source_bucket, source_object) = source.split_once('/')?;
            Some((
                "POST".into(),
                with_condition(format!(
                    "/storage/v1/b/{source_bucket}/o/{source_object}/copyTo/b/{bucket}/o/{object}"
                )),
            ))
        }
        // fake-gcs-server answers a media upload's precondition only from v1.53 on (its PR
        // #2308), a multipart upload's always: a conditional put goes as a multipart upload
        // (its body wrapped by `multipart_body`).
        ("PUT", None) if condition.is_some() => Some((
            "POST".into(),
            with_condition(format!(
                "/upload/storage/v1/b/{bucket}/o?uploadType=multipart&name={object}"
            )),
        )),
        ("PUT", None) => Some((
            "POST".into(),
            format!("/upload/storage/v1/b/{bucket}/o?uploadType=media&name={object}"),
        )),
        ("DELETE", _) => Some((
            "DELETE".into(),
            format!("/storage/v1/b/{bucket}/o/{object}"),
        )),
        _ => None,
    }
}

/// The body of a JSON-API multipart upload of `data` to the object `name=` of `target`, with
/// its headers' content type and length set.
fn multipart_body(target: &str, data: &[u8], headers: &mut Vec<(String, String)>) -> Vec<u8> {
    const BOUNDARY: &str = "zarr-test-support-boundary";
    let encoded = target
        .split(['?', '&'])
        .find_map(|p| p.strip_prefix("name="))
        .unwrap_or_default();
    let name = percent_decode(encoded);
    let metadata = serde_json::json!({ "name": name }).to_string();
    let mut body = format!(
        "--{BOUNDARY}\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n{metadata}\r\n\
         --{BOUNDARY}\r\nContent-Type: application/octet-stream\r\n\r\n"
    )
    .into_bytes();
    body.extend_from_slice(data);
    body.extend_from_slice(format!("\r\n--{BOUNDARY}--\r\n").as_bytes());
    headers.retain(|(k, _)| {
        !k.eq_ignore_ascii_case("content-type") && !k.eq_ignore_ascii_case("content-length")
    });
    headers.push((
        "Content-Type".into(),
        format!("multipart/related; boundary={BOUNDARY}"),
    ));
    headers.push(("Content-Length".into(), body.len().to_string()));
    body
}

/// `text` with its `%XX` escapes decoded.
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).to_string()
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}
