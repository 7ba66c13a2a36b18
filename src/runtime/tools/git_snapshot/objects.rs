//! Git objects written by neocode itself: a blob or tree is hashed (SHA-1 of `kind len\0body`)
//! and stored as a loose object (`objects/ab/cdef…`, zlib "stored" blocks, which every git
//! reads) beneath the workspace root, every folder opened without following a symlink. No
//! git program runs, so nothing a repository configures (filters, hooks, fsmonitor, `core.*`
//! programs) can run either.

use std::ffi::CString;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};

use ring::digest::{Context, SHA1_FOR_LEGACY_USE_ONLY};

/// A SHA-1 object id.
pub(crate) type Oid = [u8; 20];

/// Bytes of one stored deflate block at most.
const BLOCK: usize = 65_535;

/// The id of an object of `kind` holding `body`.
pub(crate) fn hash(kind: &str, body: &[u8]) -> Oid {
    let mut c = Context::new(&SHA1_FOR_LEGACY_USE_ONLY);
    c.update(format!("{kind} {}\0", body.len()).as_bytes());
    c.update(body);
    to_oid(c.finish().as_ref())
}

fn to_oid(d: &[u8]) -> Oid {
    let mut o = [0u8; 20];
    o.copy_from_slice(&d[..20]);
    o
}

/// Lower-case hex of an id.
pub(crate) fn hex(oid: &Oid) -> String {
    use std::fmt::Write as _;
    oid.iter().fold(String::with_capacity(40), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

fn cstr(s: &str) -> io::Result<CString> {
    CString::new(s).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

/// Opens `name` beneath the folder `dir` with `flags` (never following a final symlink).
fn open_at(dir: &OwnedFd, name: &str, flags: i32, mode: u32) -> io::Result<OwnedFd> {
    let c = cstr(name)?;
    // SAFETY: `dir` is an open folder descriptor and `c` one NUL-terminated component.
    let fd = unsafe {
        libc::openat(
            dir.as_raw_fd(),
            c.as_ptr(),
            flags | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            mode as libc::c_uint,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Adler-32 of a zlib stream, fed in pieces.
struct Adler(u32, u32);

impl Adler {
    fn update(&mut self, data: &[u8]) {
        const MOD: u32 = 65_521;
        for chunk in data.chunks(5_552) {
            for &b in chunk {
                self.0 += u32::from(b);
                self.1 += self.0;
            }
            self.0 %= MOD;
            self.1 %= MOD;
        }
    }

    fn value(&self) -> u32 {
        (self.1 << 16) | self.0
    }
}

/// Writes a zlib stream of stored (uncompressed) deflate blocks, as many as the data needs.
struct Stored<W: Write> {
    out: W,
    adler: Adler,
    pending: Vec<u8>,
}

impl<W: Write> Stored<W> {
    fn new(mut out: W) -> io::Result<Stored<W>> {
        // CMF 0x78 (deflate, 32 KiB window), FLG 0x01: 0x7801 is a multiple of 31.
        out.write_all(&[0x78, 0x01])?;
        Ok(Stored {
            out,
            adler: Adler(1, 0),
            pending: Vec::with_capacity(BLOCK),
        })
    }

    fn block(&mut self, last: bool) -> io::Result<()> {
        let len = self.pending.len() as u16;
        self.out.write_all(&[u8::from(last)])?;
        self.out.write_all(&len.to_le_bytes())?;
        self.out.write_all(&(!len).to_le_bytes())?;
        self.out.write_all(&self.pending)?;
        self.pending.clear();
        Ok(())
    }

    fn write(&mut self, mut data: &[u8]) -> io::Result<()> {
        self.adler.update(data);
        while !data.is_empty() {
            let n = (BLOCK - self.pending.len()).min(data.len());
            self.pending.extend_from_slice(&data[..n]);
            data = &data[n..];
            if self.pending.len() == BLOCK {
                self.block(false)?;
            }
        }
        Ok(())
    }

    fn finish(mut self) -> io::Result<W> {
        self.block(true)?;
        let a = self.adler.value();
        self.out.write_all(&a.to_be_bytes())?;
        Ok(self.out)
    }
}

/// The repository's object folder, held open.
pub(crate) struct Store {
    objects: OwnedFd,
}

/// Names of temporary object files: never taken by git, removed when a write fails.
static SEQ: AtomicU64 = AtomicU64::new(0);

impl Store {
    /// `objects` is the `objects` folder of the repository, opened beneath the root.
    pub(crate) fn new(objects: OwnedFd) -> Store {
        Store { objects }
    }

    fn fan(&self, oid: &Oid, create: bool) -> io::Result<OwnedFd> {
        let name = hex(oid);
        let flags = libc::O_PATH | libc::O_DIRECTORY;
        match open_at(&self.objects, &name[..2], flags, 0) {
            Err(e) if create && e.raw_os_error() == Some(libc::ENOENT) => {
                let c = cstr(&name[..2])?;
                // SAFETY: an open folder descriptor and one component.
                let rc = unsafe { libc::mkdirat(self.objects.as_raw_fd(), c.as_ptr(), 0o777) };
                if rc != 0 && io::Error::last_os_error().raw_os_error() != Some(libc::EEXIST) {
                    return Err(io::Error::last_os_error());
                }
                open_at(&self.objects, &name[..2], flags, 0)
            }
            other => other,
        }
    }

    /// Whether the loose object `oid` exists (a packed one is not looked for: writing it
    /// again as a loose object is harmless).
    pub(crate) fn has(&self, oid: &Oid) -> bool {
        let Ok(fan) = self.fan(oid, false) else {
            return false;
        };
        let Ok(name) = cstr(&hex(oid)[2..]) else {
            return false;
        };
        // SAFETY: `st` is written by the kernel; `fan` is an open folder descriptor.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        let rc = unsafe {
            libc::fstatat(
                fan.as_raw_fd(),
                name.as_ptr(),
                &mut st,
                libc::AT_SYMLINK_NOFOLLOW,
            )
        };
        rc == 0 && (st.st_mode & libc::S_IFMT) == libc::S_IFREG
    }

    /// Stores `body` as an object of `kind` (unless it is there) and returns its id.
    pub(crate) fn put(&self, kind: &str, body: &[u8]) -> io::Result<Oid> {
        let oid = hash(kind, body);
        if !self.has(&oid) {
            let header = format!("{kind} {}\0", body.len());
            let (tmp, written) = self.temporary(|s| {
                s.write(header.as_bytes())?;
                s.write(body)
            })?;
            tmp.settle(&written.map(|()| oid))?;
        }
        Ok(oid)
    }

    /// Stores the `len` bytes read from `file` as a blob and returns its id. Fails when the
    /// file does not hold exactly `len` bytes (it changed while it was read). A large file
    /// is hashed while it is written, in one pass.
    pub(crate) fn put_file(&self, file: &mut std::fs::File, len: u64) -> io::Result<Oid> {
        if len <= 1 << 20 {
            let mut data = Vec::with_capacity(len as usize);
            file.take(len + 1).read_to_end(&mut data)?;
            if data.len() as u64 != len {
                return Err(changed());
            }
            return self.put("blob", &data);
        }
        let header = format!("blob {len}\0");
        let mut ctx = Context::new(&SHA1_FOR_LEGACY_USE_ONLY);
        ctx.update(header.as_bytes());
        let (tmp, written) = self.temporary(|s| {
            s.write(header.as_bytes())?;
            let mut buf = vec![0u8; 1 << 16];
            let mut left = len;
            loop {
                let n = file.read(&mut buf)?;
                if n == 0 {
                    break;
                }
                if n as u64 > left {
                    return Err(changed());
                }
                left -= n as u64;
                ctx.update(&buf[..n]);
                s.write(&buf[..n])?;
            }
            if left != 0 {
                return Err(changed());
            }
            Ok(())
        })?;
        let oid = written.map(|()| to_oid(ctx.finish().as_ref()));
        tmp.settle(&oid)?;
        oid
    }

    /// Writes an object through `fill` into a new temporary file of the object folder.
    fn temporary(
        &self,
        fill: impl FnOnce(&mut Stored<io::BufWriter<std::fs::File>>) -> io::Result<()>,
    ) -> io::Result<(Temporary<'_>, io::Result<()>)> {
        let name = format!(
            "tmp_obj_neocode_{}_{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        );
        let fd = open_at(
            &self.objects,
            &name,
            libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL,
            0o444,
        )?;
        let tmp = Temporary {
            store: self,
            name: cstr(&name)?,
        };
        let written = (|| {
            let mut s = Stored::new(io::BufWriter::new(std::fs::File::from(fd)))?;
            fill(&mut s)?;
            s.finish()?
                .into_inner()
                .map_err(io::IntoInnerError::into_error)?;
            Ok(())
        })();
        Ok((tmp, written))
    }
}

/// A temporary object file in the object folder: renamed to its object's name by
/// [`Temporary::settle`], removed otherwise.
struct Temporary<'a> {
    store: &'a Store,
    name: CString,
}

impl Temporary<'_> {
    /// Gives the file its object's name `oid` (when it was written whole), or removes it
    /// (when it was not, or the object is there already).
    fn settle(self, oid: &io::Result<Oid>) -> io::Result<()> {
        let Ok(oid) = oid else { return Ok(()) };
        if self.store.has(oid) {
            return Ok(());
        }
        let fan = self.store.fan(oid, true)?;
        let name = cstr(&hex(oid)[2..])?;
        // SAFETY: the temporary name is one component of the object folder, the object's
        // name one component of its fan-out folder; both descriptors are open folders.
        let rc = unsafe {
            libc::renameat(
                self.store.objects.as_raw_fd(),
                self.name.as_ptr(),
                fan.as_raw_fd(),
                name.as_ptr(),
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

impl Drop for Temporary<'_> {
    fn drop(&mut self) {
        // SAFETY: removes our temporary name (gone already once it was renamed).
        unsafe { libc::unlinkat(self.store.objects.as_raw_fd(), self.name.as_ptr(), 0) };
    }
}

fn changed() -> io::Error {
    io::Error::other("the file changed while it was read")
}

/// One entry of a tree: its name, git mode (`100644`, `100755`, `120000`, `40000`) and id.
pub(crate) struct TreeEntry<'a> {
    pub name: &'a str,
    pub mode: &'static str,
    pub oid: Oid,
}

/// The body of a tree object: entries sorted the way git sorts them (a folder's name
/// compares as if it ended in `/`).
pub(crate) fn tree_body(entries: &mut [TreeEntry<'_>]) -> Vec<u8> {
    let key = |e: &TreeEntry<'_>| {
        let mut k = e.name.as_bytes().to_vec();
        if e.mode == "40000" {
            k.push(b'/');
        }
        k
    };
    entries.sort_by_cached_key(key);
    let mut body = Vec::new();
    for e in entries.iter() {
        body.extend_from_slice(e.mode.as_bytes());
        body.push(b' ');
        body.extend_from_slice(e.name.as_bytes());
        body.push(0);
        body.extend_from_slice(&e.oid);
    }
    body
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blob_ids_are_gits() {
        // `printf 'hello\n' | git hash-object --stdin`
        assert_eq!(
            hex(&hash("blob", b"hello\n")),
            "ce013625030ba8dba906f756967f9e9ca394464a"
        );
        // The empty blob and the empty tree.
        assert_eq!(
            hex(&hash("blob", b"")),
            "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"
        );
        assert_eq!(
            hex(&hash("tree", b"")),
            "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
        );
    }

    #[test]
    fn stored_zlib_round_trips_through_a_real_inflater() {
        // Checked against the adler-32 of known data: "Wikipedia" is 0x11E60398.
        let mut a = Adler(1, 0);
        a.update(b"Wikipedia");
        assert_eq!(a.value(), 0x11E6_0398);
        let data: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        let mut s = Stored::new(Vec::new()).unwrap();
        s.write(&data[..70_000]).unwrap();
        s.write(&data[70_000..]).unwrap();
        let z = s.finish().unwrap();
        // 2 header bytes, 4 blocks of 5 header bytes, the data, 4 trailer bytes.
        assert_eq!(z.len(), 2 + 4 * 5 + data.len() + 4);
    }
}
