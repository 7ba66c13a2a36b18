//! `file:` URIs of paths, as language servers name documents.

use std::path::Path;

use super::error::LspError;

/// `file://` and `path` percent-encoded (everything but unreserved characters and `/`).
pub(crate) fn from_path(path: &Path) -> Result<String, LspError> {
    let Some(s) = path.to_str().filter(|s| s.starts_with('/')) else {
        return Err(LspError::BadPath(path.display().to_string()));
    };
    let mut out = String::from("file://");
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    Ok(out)
}

/// The path of a `file:` URI (percent-decoded); `None` for other schemes.
pub(crate) fn to_path(uri: &str) -> Option<std::path::PathBuf> {
    let rest = uri.strip_prefix("file://")?;
    let bytes = rest.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(h) = rest.get(i + 1..i + 3)
            && let Ok(b) = u8::from_str_radix(h, 16)
        {
            out.push(b);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    use std::os::unix::ffi::OsStringExt;
    Some(std::path::PathBuf::from(std::ffi::OsString::from_vec(out)))
}

#[cfg(test)]
mod tests {
    use super::{from_path, to_path};

    #[test]
    fn paths_with_spaces_and_accents_round_trip() {
        let p = std::path::Path::new("/tmp/a b/é#x.py");
        let u = from_path(p).unwrap();
        assert_eq!(u, "file:///tmp/a%20b/%C3%A9%23x.py");
        assert_eq!(to_path(&u).unwrap(), p);
        assert!(from_path(std::path::Path::new("rel.py")).is_err());
    }
}
