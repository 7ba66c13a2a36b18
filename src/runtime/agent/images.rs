//! Images a user message carries ([`super::start::TurnRequest::images`]): read and checked before
//! the turn starts, stored as assets of the session with the message the turn appends.

use super::error::{StartCode, StartError};
use std::path::{Path, PathBuf};

/// Largest image sent to a model.
pub(crate) const MAX_IMAGE_BYTES: u64 = 20 * 1024 * 1024;

/// The MIME type of an image file by its extension.
pub(crate) fn image_mime(path: &Path) -> Option<&'static str> {
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    Some(match ext.as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        _ => return None,
    })
}

/// An image read from a file, not stored yet.
#[derive(Debug, Clone)]
pub(crate) struct Image {
    pub mime: &'static str,
    pub bytes: Vec<u8>,
}

fn refused(message: String) -> StartError {
    StartError {
        code: StartCode::Usage,
        message,
    }
}

/// Reads and checks the images of a message; the first bad one refuses them all (nothing is
/// stored).
pub(crate) fn load(paths: &[PathBuf]) -> Result<Vec<Image>, StartError> {
    let mut out = Vec::new();
    for path in paths {
        let mime = image_mime(path).ok_or_else(|| {
            refused(format!(
                "{} is not an image neocode can send (png, jpeg, gif, webp)",
                path.display()
            ))
        })?;
        let meta = std::fs::metadata(path)
            .map_err(|e| refused(format!("cannot read {}: {e}", path.display())))?;
        if meta.len() > MAX_IMAGE_BYTES {
            return Err(refused(format!("{} is larger than 20 MB", path.display())));
        }
        let bytes = std::fs::read(path)
            .map_err(|e| refused(format!("cannot read {}: {e}", path.display())))?;
        out.push(Image { mime, bytes });
    }
    Ok(out)
}
