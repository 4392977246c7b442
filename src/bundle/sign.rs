//! Signed bundles: `.signatures.json` holds one JWT whose payload lists every file of the bundle
//! with its digest, as `opa sign` writes it. Verification follows OPA's `v1/bundle/verify.go`:
//!
//! 1. exactly one JWT in `signatures`;
//! 2. its signature verifies with the configured key and algorithm (the `jsonwebtoken` crate; no
//!    crypto here), the key id it names (the header's `kid`, else the payload's `keyid`), if
//!    any, is the configured one when one is configured, and its `scope` is the configured scope
//!    (`""` by default);
//! 3. every file of the bundle but `.signatures.json` is listed, with a SHA-256 digest that
//!    matches: over the bytes for most files, and over the parsed document with object keys
//!    sorted (OPA's canonical form) for `.manifest` and data files, so whitespace does not count;
//! 4. every listed file is in the bundle.
//!
//! Any failure refuses the whole bundle.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use serde_json::Value as Json;
use sha2::{Digest, Sha256};

use super::layout::Files;

/// The name of the signature file.
pub const SIGNATURES: &str = ".signatures.json";

/// How signed bundles are verified (`bundle.verification` in `reasonix.yaml`).
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct VerificationSpec {
    /// The public key (PEM) for RS*/ES*/PS*, or the file holding the shared secret for HS*.
    pub key: PathBuf,
    /// The JWT algorithm: `RS256`, `ES256`, `HS256`, … (default `RS256`, as in OPA).
    #[serde(default)]
    pub algorithm: Option<String>,
    /// The key id the JWT must name, when given.
    #[serde(default)]
    pub keyid: Option<String>,
    /// The scope the JWT must carry (default `""`).
    #[serde(default)]
    pub scope: Option<String>,
}

/// A configured key, ready to verify.
pub struct Verifier {
    key: DecodingKey,
    algorithm: Algorithm,
    keyid: Option<String>,
    scope: String,
}

impl std::fmt::Debug for Verifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key itself stays out of logs.
        f.debug_struct("Verifier")
            .field("algorithm", &self.algorithm)
            .field("keyid", &self.keyid)
            .finish_non_exhaustive()
    }
}

impl Verifier {
    /// Reads the key `spec` names (relative paths from `base`).
    pub fn new(spec: &VerificationSpec, base: &Path) -> Result<Verifier, String> {
        let name = spec.algorithm.as_deref().unwrap_or("RS256");
        let algorithm: Algorithm = name.parse().map_err(|_| {
            format!("unknown signature algorithm {name:?}; use RS256, ES256, HS256 or another JWT algorithm")
        })?;
        let path = base.join(&spec.key);
        let bytes = std::fs::read(&path)
            .map_err(|e| format!("cannot read the verification key {}: {e}", path.display()))?;
        let key = match algorithm {
            Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512 => {
                DecodingKey::from_secret(&bytes).map_err(|e| format!("{}: {e}", path.display()))
            }
            Algorithm::ES256 | Algorithm::ES384 => DecodingKey::from_ec_pem(&bytes)
                .map_err(|e| format!("{}: not an EC public key in PEM: {e}", path.display())),
            Algorithm::EdDSA => DecodingKey::from_ed_pem(&bytes)
                .map_err(|e| format!("{}: not an Ed25519 public key in PEM: {e}", path.display())),
            _ => DecodingKey::from_rsa_pem(&bytes)
                .map_err(|e| format!("{}: not an RSA public key in PEM: {e}", path.display())),
        }?;
        Ok(Verifier {
            key,
            algorithm,
            keyid: spec.keyid.clone(),
            scope: spec.scope.clone().unwrap_or_default(),
        })
    }
}

#[derive(Deserialize)]
struct Signatures {
    signatures: Vec<String>,
}

#[derive(Deserialize)]
struct Payload {
    files: Vec<FileDigest>,
    #[serde(default)]
    keyid: Option<String>,
    #[serde(default)]
    scope: Option<String>,
}

#[derive(Deserialize)]
struct FileDigest {
    name: String,
    hash: String,
    algorithm: String,
}

/// Verifies the bundle's signature over every file (see the module doc).
pub fn verify(files: &Files, verifier: &Verifier) -> Result<(), String> {
    let bytes = files
        .get(SIGNATURES)
        .ok_or("the bundle has no .signatures.json, and a verification key is configured")?;
    let signatures: Signatures =
        serde_json::from_slice(bytes).map_err(|e| format!(".signatures.json is not valid: {e}"))?;
    let token = match signatures.signatures.as_slice() {
        [one] => one,
        [] => return Err(".signatures.json: missing JWT (expected exactly one)".into()),
        _ => {
            return Err(
                ".signatures.json: multiple JWTs not supported (expected exactly one)".into(),
            );
        }
    };
    let header = jsonwebtoken::decode_header(token).map_err(|e| format!("the JWT: {e}"))?;
    let mut validation = Validation::new(verifier.algorithm);
    validation.required_spec_claims.clear();
    validation.validate_exp = false;
    validation.validate_aud = false;
    let payload = jsonwebtoken::decode::<Payload>(token, &verifier.key, &validation)
        .map_err(|e| format!("the JWT does not verify with the configured key: {e}"))?
        .claims;
    // As in OPA, the configured key id picks the key; a JWT that names another key was not
    // meant for it (one that names none is judged by its signature alone).
    if let Some(want) = &verifier.keyid
        && let Some(named) = header.kid.as_ref().or(payload.keyid.as_ref())
        && named != want
    {
        return Err(format!(
            "the JWT names key {named:?}, and the configured key is {want:?}"
        ));
    }
    if payload.scope.as_deref().unwrap_or("") != verifier.scope {
        return Err("scope mismatch".into());
    }
    let mut listed: BTreeMap<&str, &FileDigest> = payload
        .files
        .iter()
        .map(|f| (f.name.trim_start_matches('/'), f))
        .collect();
    for (path, bytes) in files {
        if path == SIGNATURES {
            continue;
        }
        let Some(file) = listed.remove(path.as_str()) else {
            return Err(format!("file {path} not included in bundle signature"));
        };
        if file.algorithm != "SHA-256" {
            return Err(format!(
                "{path}: hashing algorithm {:?} is not supported; sign with SHA-256",
                file.algorithm
            ));
        }
        let got = digest(path, bytes)?;
        if !got.eq_ignore_ascii_case(&file.hash) {
            return Err(format!(
                "{path}: digest mismatch (want: {}, got: {got})",
                file.hash
            ));
        }
    }
    if !listed.is_empty() {
        let missing: Vec<&str> = listed.into_keys().collect();
        return Err(format!(
            "file(s) {missing:?} specified in bundle signatures but not found in the target bundle"
        ));
    }
    Ok(())
}

/// The SHA-256 of a file as OPA computes it for a signature (hex).
pub fn digest(path: &str, bytes: &[u8]) -> Result<String, String> {
    let mut hasher = Sha256::new();
    let base = path.rsplit('/').next().unwrap_or(path);
    match base {
        "data.json" | ".manifest" => {
            let value: Json = serde_json::from_slice(bytes).map_err(|e| format!("{path}: {e}"))?;
            canonical(&value, &mut hasher);
        }
        "data.yaml" | "data.yml" => {
            let value: Json = yaml_serde::from_slice(bytes).map_err(|e| format!("{path}: {e}"))?;
            canonical(&value, &mut hasher);
        }
        _ => hasher.update(bytes),
    }
    Ok(hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

/// OPA's canonical form of a structured document: `{` keys in sorted order `:` value `,` … `}`,
/// `[` values `,` … `]`, primitives as compact JSON.
fn canonical(value: &Json, out: &mut Sha256) {
    match value {
        Json::Object(map) => {
            out.update(b"{");
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.update(b",");
                }
                out.update(Json::String(key.clone()).to_string().as_bytes());
                out.update(b":");
                canonical(&map[key], out);
            }
            out.update(b"}");
        }
        Json::Array(items) => {
            out.update(b"[");
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.update(b",");
                }
                canonical(item, out);
            }
            out.update(b"]");
        }
        other => out.update(other.to_string().as_bytes()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn structured_files_hash_their_canonical_form() {
        let a = digest("x/data.json", br#"{"b": [1, 2], "a": "s"}"#).unwrap();
        let b = digest("x/data.json", b"{\"a\":\"s\",\n \"b\":[1,2]}").unwrap();
        assert_eq!(a, b);
        // The canonical text, hashed as bytes.
        assert_eq!(a, digest("plain", br#"{"a":"s","b":[1,2]}"#).unwrap());
        assert_ne!(
            digest("p.rego", b"package a\n").unwrap(),
            digest("p.rego", b"package a \n").unwrap()
        );
    }
}
