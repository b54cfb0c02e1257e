//! Object stores by URL: `s3://`, `gs://`, `az://` (and `abfs://`, `abfss://`), `http://`,
//! `https://` and `file://`, configured from the standard environment variables of each
//! cloud (`AWS_ACCESS_KEY_ID`, `AWS_ENDPOINT_URL`, `GOOGLE_SERVICE_ACCOUNT`,
//! `AZURE_STORAGE_ACCOUNT_NAME`, …) and from explicit settings
//! ([`StoreOptions::config`]). One client per bucket is kept for the process, so a
//! dataset's files share connections. Every HTTP request is counted, and so is every
//! failed attempt that was retried ([`http_counts`]).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use object_store::azure::{AzureConfigKey, MicrosoftAzureBuilder};
use object_store::client::{
    HttpClient, HttpConnector, HttpError, HttpRequest, HttpResponse, HttpService, ReqwestConnector,
};
use object_store::gcp::{GoogleCloudStorageBuilder, GoogleConfigKey};
use object_store::http::HttpBuilder;
use object_store::local::LocalFileSystem;
use object_store::path::Path as ObjectPath;
use object_store::{BackoffConfig, ClientConfigKey, ClientOptions, ObjectStore, RetryConfig};
use sift_format::RangeOptions;
use url::Url;

use crate::error::{StoreError, invalid};

/// How object stores are reached.
#[derive(Debug, Clone)]
pub struct StoreOptions {
    /// Settings of the store's client, on top of the environment: the keys of
    /// `object_store`'s builders (`aws_endpoint`, `aws_region`, `aws_allow_http`,
    /// `google_service_account`, `azure_storage_account_name`, …). A key the URL's store
    /// does not know is an error.
    pub config: Vec<(String, String)>,
    /// Requests of one scan in flight at once.
    pub max_in_flight: usize,
    /// Attempts after the first for a request that failed in a way worth retrying
    /// (connection errors, timeouts, 5xx and 429 responses), with exponential backoff.
    pub max_retries: usize,
    /// How chunk reads become requests (gap and size limits, footer guess).
    pub ranges: RangeOptions,
}

impl Default for StoreOptions {
    fn default() -> Self {
        Self {
            config: Vec::new(),
            max_in_flight: 16,
            max_retries: 10,
            ranges: RangeOptions::default(),
        }
    }
}

/// Whether `location` is a URL (`scheme://…`) rather than a local path.
pub fn is_url(location: &str) -> bool {
    match location.split_once("://") {
        Some((scheme, _)) => {
            scheme.len() > 1
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        }
        None => false,
    }
}

/// HTTP traffic of the process's object stores so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HttpCounts {
    /// HTTP requests sent (retries included).
    pub requests: u64,
    /// Attempts that failed with a connection error, a timeout or a 5xx/429 response
    /// (each retried unless the retries ran out).
    pub failures: u64,
}

static REQUESTS: AtomicU64 = AtomicU64::new(0);
static FAILURES: AtomicU64 = AtomicU64::new(0);

/// HTTP requests and failed attempts of every object store client of the process.
pub fn http_counts() -> HttpCounts {
    HttpCounts {
        requests: REQUESTS.load(Ordering::Relaxed),
        failures: FAILURES.load(Ordering::Relaxed),
    }
}

/// The `reqwest` client, with every request and failed attempt counted.
#[derive(Debug, Default)]
struct CountingConnector;

impl HttpConnector for CountingConnector {
    fn connect(&self, options: &ClientOptions) -> object_store::Result<HttpClient> {
        let inner = ReqwestConnector::default().connect(options)?;
        Ok(HttpClient::new(Counting(inner)))
    }
}

#[derive(Debug)]
struct Counting(HttpClient);

#[async_trait::async_trait]
impl HttpService for Counting {
    async fn call(&self, req: HttpRequest) -> Result<HttpResponse, HttpError> {
        REQUESTS.fetch_add(1, Ordering::Relaxed);
        let response = self.0.execute(req).await;
        let failed = match &response {
            Ok(r) => r.status().is_server_error() || r.status().as_u16() == 429,
            Err(_) => true,
        };
        if failed {
            FAILURES.fetch_add(1, Ordering::Relaxed);
        }
        response
    }
}

/// The store holding `url`'s object, and the object's path in it.
pub fn store_for(
    url: &Url,
    options: &StoreOptions,
) -> Result<(Arc<dyn ObjectStore>, ObjectPath), StoreError> {
    let path = ObjectPath::from_url_path(url.path())
        .map_err(|e| invalid(url.as_str(), format!("bad object path: {e}")))?;
    let key = format!(
        "{}://{}|{:?}|{}",
        url.scheme(),
        url.authority(),
        options.config,
        options.max_retries
    );
    static STORES: OnceLock<Mutex<HashMap<String, Arc<dyn ObjectStore>>>> = OnceLock::new();
    let stores = STORES.get_or_init(Mutex::default);
    if let Some(store) = stores.lock().ok().and_then(|s| s.get(&key).cloned()) {
        return Ok((store, path));
    }
    let store = build(url, options)?;
    if let Ok(mut s) = stores.lock() {
        s.insert(key, Arc::clone(&store));
    }
    Ok((store, path))
}

/// A new client for `url`'s bucket (or host).
fn build(url: &Url, options: &StoreOptions) -> Result<Arc<dyn ObjectStore>, StoreError> {
    let retry = RetryConfig {
        backoff: BackoffConfig {
            init_backoff: Duration::from_millis(50),
            max_backoff: Duration::from_secs(5),
            base: 2.0,
        },
        max_retries: options.max_retries,
        retry_timeout: Duration::from_secs(120),
    };
    let name = url.as_str();
    let unknown = |key: &str, store: &str| {
        invalid(
            name,
            format!("'{key}' is not a setting of {store} object stores"),
        )
    };
    // Each cloud's builder has its own key type; the steps are the same.
    macro_rules! configured {
        ($builder:expr, $key:ty, $store:literal) => {{
            let mut b = $builder.with_url(base_url(url));
            for (k, v) in &options.config {
                let key: $key = k.parse().map_err(|_| unknown(k, $store))?;
                b = b.with_config(key, v);
            }
            b.with_retry(retry)
                .with_http_connector(CountingConnector)
                .build()
                .map(|s| Arc::new(s) as Arc<dyn ObjectStore>)
        }};
    }
    let built = match url.scheme() {
        "s3" | "s3a" => configured!(AmazonS3Builder::from_env(), AmazonS3ConfigKey, "S3"),
        "gs" => configured!(
            GoogleCloudStorageBuilder::from_env(),
            GoogleConfigKey,
            "GCS"
        ),
        "az" | "azure" | "abfs" | "abfss" => {
            configured!(MicrosoftAzureBuilder::from_env(), AzureConfigKey, "Azure")
        }
        "http" | "https" => configured!(HttpBuilder::new(), ClientConfigKey, "HTTP"),
        "file" => Ok(Arc::new(LocalFileSystem::new()) as Arc<dyn ObjectStore>),
        other => {
            return Err(invalid(
                name,
                format!(
                    "unknown scheme '{other}://' (expected s3://, gs://, az://, abfs://, \
                     http://, https:// or file://)"
                ),
            ));
        }
    };
    built.map_err(|e| invalid(name, e.to_string()))
}

/// The URL of the bucket (or host) holding `url`'s object.
fn base_url(url: &Url) -> String {
    format!("{}://{}", url.scheme(), url.authority())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_told_from_paths() {
        assert!(is_url("s3://bucket/key.sift"));
        assert!(is_url("https://example.invalid/a.sift"));
        assert!(is_url("file:///tmp/a.sift"));
        assert!(!is_url("/tmp/a.sift"));
        assert!(!is_url("data/a://b.sift"));
        assert!(!is_url("C:/data/a.sift"));
    }

    #[test]
    fn unknown_schemes_and_settings_are_errors() {
        let Ok(url) = Url::parse("ftp://host/a.sift") else {
            unreachable!("a valid URL")
        };
        let e = store_for(&url, &StoreOptions::default()).err();
        assert!(e.is_some_and(|e| e.to_string().contains("unknown scheme 'ftp://'")));
        let Ok(url) = Url::parse("s3://bucket/a.sift") else {
            unreachable!("a valid URL")
        };
        let options = StoreOptions {
            config: vec![("no_such_key".into(), "1".into())],
            ..Default::default()
        };
        let e = store_for(&url, &options).err().map(|e| e.to_string());
        assert!(
            e.as_deref()
                .is_some_and(|e| e.contains("'no_such_key' is not a setting of S3")),
            "{e:?}"
        );
    }
}
