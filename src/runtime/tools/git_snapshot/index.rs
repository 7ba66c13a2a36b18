//! The user's git index read as a stat cache, the way `git add` uses it: a file whose
//! `lstat` matches its entry (and is not "racily clean", i.e. not modified in the second the
//! index was written) has the entry's blob as its content, so it is not read again. Only
//! plain indexes are used (versions 2 to 4, no split or sparse index); anything else, or a
//! malformed file, means no cache (every file is hashed). The index is written by commands
//! too: a forged entry can only make the snapshot record a wrong "before", which the same
//! command could have written into the file itself.

use std::collections::HashMap;

use super::objects::Oid;

/// What the index says about one path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    pub ctime: (u32, u32),
    pub mtime: (u32, u32),
    pub ino: u32,
    pub size: u32,
    /// `0o100644`, `0o100755` or `0o120000`.
    pub mode: u32,
    pub oid: Oid,
}

/// The stage-0 entries of regular files and symlinks, by path.
pub(crate) struct Index {
    pub entries: HashMap<Box<str>, Entry>,
    /// When the index file was written: an entry modified at or after it is not trusted.
    pub written: (i64, i64),
}

struct Reader<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.at.checked_add(n)?;
        let s = self.data.get(self.at..end)?;
        self.at = end;
        Some(s)
    }

    fn u32(&mut self) -> Option<u32> {
        let b = self.take(4)?;
        Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u16(&mut self) -> Option<u16> {
        let b = self.take(2)?;
        Some(u16::from_be_bytes([b[0], b[1]]))
    }

    /// Git's offset varint (index v4 path compression).
    fn varint(&mut self) -> Option<usize> {
        let mut b = self.take(1)?[0];
        let mut v = usize::from(b & 0x7f);
        while b & 0x80 != 0 {
            b = self.take(1)?[0];
            v = v.checked_add(1)?.checked_mul(128)? | usize::from(b & 0x7f);
        }
        Some(v)
    }
}

/// In the extended flags.
const SKIP_WORKTREE: u16 = 1 << 14;
const INTENT_TO_ADD: u16 = 1 << 13;
/// In `flags` (version 3 and up): an extended flags word follows.
const EXTENDED: u16 = 0x4000;

/// Parses an index file; `None` when it is not a plain index neocode can trust as a cache.
pub(crate) fn parse(data: &[u8], written: (i64, i64)) -> Option<Index> {
    let mut r = Reader { data, at: 0 };
    if r.take(4)? != b"DIRC" {
        return None;
    }
    let version = r.u32()?;
    if !(2..=4).contains(&version) {
        return None;
    }
    let count = r.u32()? as usize;
    let mut entries = HashMap::with_capacity(count.min(1 << 20));
    let mut last: Vec<u8> = Vec::new();
    for _ in 0..count {
        let start = r.at;
        let ctime = (r.u32()?, r.u32()?);
        let mtime = (r.u32()?, r.u32()?);
        let _dev = r.u32()?;
        let ino = r.u32()?;
        let mode = r.u32()?;
        let _uid = r.u32()?;
        let _gid = r.u32()?;
        let size = r.u32()?;
        let mut oid = [0u8; 20];
        oid.copy_from_slice(r.take(20)?);
        let flags = r.u16()?;
        let extended = if version >= 3 && flags & EXTENDED != 0 {
            r.u16()?
        } else {
            0
        };
        let path: Vec<u8> = if version == 4 {
            let strip = r.varint()?;
            let keep = last.len().checked_sub(strip)?;
            let rest = &data[r.at..];
            let nul = rest.iter().position(|&b| b == 0)?;
            let mut p = last[..keep].to_vec();
            p.extend_from_slice(&rest[..nul]);
            r.at += nul + 1;
            p
        } else {
            let rest = &data[r.at..];
            let nul = rest.iter().position(|&b| b == 0)?;
            let p = rest[..nul].to_vec();
            // Entries are padded with NULs to a multiple of 8 bytes.
            let len = r.at + nul - start;
            r.at = start + (len + 8) / 8 * 8;
            p
        };
        if r.at > data.len() {
            return None;
        }
        // A sparse index lists folders: its files are not all here.
        if mode & 0o170000 == 0o040000 {
            return None;
        }
        let stage = (flags >> 12) & 0x3;
        let usable = stage == 0
            && extended & (SKIP_WORKTREE | INTENT_TO_ADD) == 0
            && matches!(mode, 0o100644 | 0o100755 | 0o120000);
        if usable && let Ok(p) = std::str::from_utf8(&path) {
            entries.insert(
                p.into(),
                Entry {
                    ctime,
                    mtime,
                    ino,
                    size,
                    mode,
                    oid,
                },
            );
        }
        last = path;
    }
    // Extensions: a split index ("link") keeps most entries in another file.
    while data.len().saturating_sub(r.at) > 20 {
        let sig = r.take(4)?;
        let len = r.u32()? as usize;
        if sig == b"link" || sig == b"sdir" {
            return None;
        }
        r.take(len)?;
    }
    Some(Index { entries, written })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn garbage_and_truncated_indexes_are_no_cache() {
        assert!(parse(b"", (0, 0)).is_none());
        assert!(parse(b"DIRC\0\0\0\x09\0\0\0\0", (0, 0)).is_none());
        let mut one = b"DIRC\0\0\0\x02\0\0\0\x01".to_vec();
        one.extend_from_slice(&[0u8; 30]);
        assert!(parse(&one, (0, 0)).is_none());
    }
}
