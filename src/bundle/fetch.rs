//! Downloading bundles from a bundle server: any HTTP(S) server or object store that serves the
//! `.tar.gz`, as OPA's bundle service protocol expects. Each download sends the last `ETag` as
//! `If-None-Match`, so an unchanged bundle costs a `304` and no transfer.
//!
//! The first download decides whether the gate starts: when it fails, the last good copy on disk
//! (`bundle.cache`, when configured) is used — verified again like a download — and otherwise the
//! gate refuses to start; it never falls back to an empty policy. Each good download is written
//! to that copy atomically (a temporary file in the same folder, synced, then renamed), so a
//! crash leaves the old copy or the new one, never half of one.
//!
//! A long run polls ([`Remote::poll`]) on its own thread: a new revision is published to the
//! [`LiveBundle`] the gates read between calls; a failed or refused download is logged and the
//! last good bundle stays in force.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::live::LiveBundle;
use super::{Bundle, BundleError, Verifier};

/// The longest one download may take.
const TIMEOUT: Duration = Duration::from_secs(30);

/// A bundle server and what the last download left: its `ETag`.
pub struct Remote {
    url: String,
    name: String,
    verifier: Option<Arc<Verifier>>,
    cache: Option<PathBuf>,
    client: reqwest::Client,
    etag: Option<String>,
    /// The revision in force (the last one taken), and those in force before it.
    in_force: Option<String>,
    before: Vec<String>,
    /// `bundle.allow_rollback`.
    allow_rollback: bool,
}

/// What one download brought.
#[derive(Debug)]
pub enum Fetched {
    /// The server said `304 Not Modified`: the bundle in force is current.
    NotModified,
    /// A new bundle, checked and loaded.
    New(Bundle),
}

/// Where the first bundle came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// Downloaded now.
    Server,
    /// The last good copy on disk, because the download failed (why).
    Cache(String),
}

impl Remote {
    /// A server at `url`; `cache` is where the last good copy is kept, when configured.
    pub fn new(
        url: &str,
        name: &str,
        verifier: Option<Arc<Verifier>>,
        cache: Option<PathBuf>,
        token: Option<&str>,
    ) -> Result<Remote, BundleError> {
        let client = client(TIMEOUT, token).map_err(|why| BundleError::Fetch {
            where_: url.to_owned(),
            why,
        })?;
        Ok(Remote {
            url: url.to_owned(),
            name: name.to_owned(),
            verifier,
            cache,
            client,
            etag: None,
            in_force: None,
            before: Vec::new(),
            allow_rollback: false,
        })
    }

    /// With `bundle.allow_rollback`: an older revision than the one in force is taken too.
    pub fn with_rollback(mut self, allow: bool) -> Remote {
        self.allow_rollback = allow;
        self
    }

    /// Takes `revision` as the one in force, or refuses it when it goes back (issue 28, item
    /// 7): lower than the one in force as a version ([`super::goes_back`]), or one that was in
    /// force earlier and was replaced — a validly signed old bundle served again. Unless
    /// `bundle.allow_rollback`.
    ///
    /// # Errors
    ///
    /// Why it goes back.
    pub fn take_revision(&mut self, revision: &str) -> Result<(), String> {
        if let Some(current) = self.in_force.clone() {
            if current == revision {
                return Ok(());
            }
            let back =
                super::goes_back(&current, revision) || self.before.iter().any(|r| r == revision);
            if back && !self.allow_rollback {
                return Err(format!(
                    "its revision {revision:?} goes back from {current:?}, the one in force (bundle.allow_rollback: true takes it)"
                ));
            }
            self.before.push(current);
        }
        self.in_force = Some(revision.to_owned());
        Ok(())
    }

    /// One download: `If-None-Match` with the last `ETag`; a `200` is checked, loaded and
    /// kept on disk before it is returned.
    pub async fn fetch(&mut self) -> Result<Fetched, BundleError> {
        let fail = |why: String| BundleError::Fetch {
            where_: self.url.clone(),
            why,
        };
        let mut request = self.client.get(&self.url);
        if let Some(etag) = &self.etag {
            request = request.header(reqwest::header::IF_NONE_MATCH, etag);
        }
        let response = request.send().await.map_err(|e| fail(e.to_string()))?;
        let status = response.status();
        if status == reqwest::StatusCode::NOT_MODIFIED {
            return Ok(Fetched::NotModified);
        }
        if !status.is_success() {
            return Err(fail(format!("the server answered {status}")));
        }
        let etag = response
            .headers()
            .get(reqwest::header::ETAG)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        // Read piece by piece, so a server that sends without end is cut off at the bound.
        let too_large = || {
            fail(format!(
                "it is larger than {} bytes",
                super::MAX_BUNDLE_BYTES
            ))
        };
        if response
            .content_length()
            .is_some_and(|n| n > super::MAX_BUNDLE_BYTES)
        {
            return Err(too_large());
        }
        let mut response = response;
        let mut bytes = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| fail(e.to_string()))? {
            if (bytes.len() + chunk.len()) as u64 > super::MAX_BUNDLE_BYTES {
                return Err(too_large());
            }
            bytes.extend_from_slice(&chunk);
        }
        let bundle = Bundle::from_tarball(&bytes, &self.url, &self.name, self.verifier.as_deref())?;
        // Checked before the last good copy is replaced: a refused rollback leaves it as it was.
        self.take_revision(&bundle.revision)
            .map_err(|why| BundleError::Layout {
                where_: self.url.clone(),
                why,
            })?;
        if let Some(cache) = &self.cache
            && let Err(e) = write_atomically(cache, &bytes)
        {
            tracing::warn!(cache = %cache.display(), error = %e, "cannot keep the bundle's last good copy");
        }
        self.etag = etag;
        Ok(Fetched::New(bundle))
    }

    /// The first bundle, before the gate starts: downloaded, else the last good copy on disk
    /// when one is configured and present, else an error (the gate does not start).
    pub fn first(&mut self) -> Result<(Bundle, Origin), BundleError> {
        // The last good copy's revision is the one in force before the first download.
        if let Some(cache) = self.cache.as_ref().filter(|c| c.exists())
            && let Ok(kept) = Bundle::load(cache, &self.name, self.verifier.as_deref())
        {
            self.in_force = Some(kept.revision);
        }
        let fetched = block_on(self.fetch())?;
        match fetched {
            Ok(Fetched::New(bundle)) => Ok((bundle, Origin::Server)),
            Ok(Fetched::NotModified) => Err(BundleError::Fetch {
                where_: self.url.clone(),
                why: "the server answered 304 Not Modified to a first download".into(),
            }),
            Err(e) => match &self.cache {
                Some(cache) if cache.exists() => {
                    let bundle = Bundle::load(cache, &self.name, self.verifier.as_deref())?;
                    Ok((bundle, Origin::Cache(e.to_string())))
                }
                _ => Err(e),
            },
        }
    }

    /// Polls every `every` on a thread of its own, publishing each new bundle to `live`; a
    /// failed download keeps the bundle in force. The thread ends with the process.
    pub fn poll(mut self, live: Arc<LiveBundle>, every: Duration) -> std::io::Result<()> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        std::thread::Builder::new()
            .name("bundle-poll".into())
            .spawn(move || {
                loop {
                    std::thread::sleep(every);
                    match runtime.block_on(self.fetch()) {
                        Ok(Fetched::NotModified) => {
                            tracing::debug!(url = %self.url, "bundle not modified");
                        }
                        Ok(Fetched::New(bundle)) => {
                            tracing::info!(url = %self.url, revision = %bundle.revision, "new bundle");
                            live.publish(bundle);
                        }
                        Err(e) => {
                            let (kept, _) = live.current();
                            tracing::warn!(
                                revision = %kept.revision,
                                "{e}; the bundle in force stays"
                            );
                        }
                    }
                }
            })?;
        Ok(())
    }
}

/// An HTTP client with a timeout and, when given, `Authorization: Bearer TOKEN` on every
/// request (marked sensitive, so it is never logged).
pub fn client(timeout: Duration, token: Option<&str>) -> Result<reqwest::Client, String> {
    let mut headers = reqwest::header::HeaderMap::new();
    if let Some(token) = token {
        let mut value = reqwest::header::HeaderValue::from_str(&format!("Bearer {token}"))
            .map_err(|_| "the token holds characters a header cannot carry".to_owned())?;
        value.set_sensitive(true);
        headers.insert(reqwest::header::AUTHORIZATION, value);
    }
    reqwest::Client::builder()
        .timeout(timeout)
        .default_headers(headers)
        .build()
        .map_err(|e| e.to_string())
}

/// The token in the environment variable `var` names, when one is named; a variable that is
/// named and unset (or empty) is an error, never a request without credentials.
pub fn token(var: Option<&str>, what: &str) -> Result<Option<String>, String> {
    match var {
        None => Ok(None),
        Some(var) => match std::env::var(var) {
            Ok(t) if !t.is_empty() => Ok(Some(t)),
            _ => Err(format!(
                "{what}.token_env names {var}, which is not set in the environment"
            )),
        },
    }
}

/// Runs a future to completion on a runtime of its own, on a thread of its own (the caller may
/// already be inside a runtime, where a second one cannot block).
fn block_on<T: Send>(
    future: impl std::future::Future<Output = T> + Send,
) -> Result<T, BundleError> {
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| BundleError::Fetch {
                        where_: String::new(),
                        why: format!("cannot start the download: {e}"),
                    })?;
                Ok(runtime.block_on(future))
            })
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p))
    })
}

/// Writes `bytes` to `path` so that a reader sees the old file or the new one, whole.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}
