//! Where `read_file`, `write_file` and `edit_file` get and put file text when a front end
//! holds the files: an editor over ACP (`fs/read_text_file`, `fs/write_text_file`), so the
//! model reads unsaved buffers and its writes land in them. Without one ([`ToolContext`]'s
//! `files` is `None`) the tools read and write the disk themselves, as always. Either way the
//! tool confines the path, refuses protected ones and records the change for a rewind first.
//!
//! [`ToolContext`]: super::ToolContext

use std::path::Path;

/// Why the front end could not read or write a file (its words, one line).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct FileAccessError(pub String);

/// A front end's file text, by absolute path (already confined to the workspace).
pub trait FileAccess: std::fmt::Debug + Send + Sync {
    /// Whether reads go to the front end (`read_file`; the before-image of `write_file`).
    fn reads(&self) -> bool;
    /// Whether writes go to the front end (`write_file`; `edit_file` when it reads too).
    fn writes(&self) -> bool;
    /// The text the front end has for `abs` (an open buffer's, else the file's).
    fn read_text(&self, abs: &Path) -> Result<String, FileAccessError>;
    /// Replaces `abs`'s text with `content` in the front end (it saves or keeps the buffer).
    fn write_text(&self, abs: &Path, content: &str) -> Result<(), FileAccessError>;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::tools::{ToolContext, run};
    use crate::session::{FileChange, Image};
    use std::path::PathBuf;
    use std::sync::{Arc, Mutex};

    /// An editor whose buffer of every file is `buffer`; writes are kept.
    #[derive(Debug, Default)]
    struct Buffers {
        buffer: String,
        writes: Mutex<Vec<(PathBuf, String)>>,
    }

    impl FileAccess for Buffers {
        fn reads(&self) -> bool {
            true
        }
        fn writes(&self) -> bool {
            true
        }
        fn read_text(&self, _: &Path) -> Result<String, FileAccessError> {
            Ok(self.buffer.clone())
        }
        fn write_text(&self, abs: &Path, content: &str) -> Result<(), FileAccessError> {
            self.writes
                .lock()
                .unwrap()
                .push((abs.to_path_buf(), content.to_string()));
            Ok(())
        }
    }

    fn space() -> (tempfile::TempDir, ToolContext, Arc<Buffers>) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(root.join("a.txt"), "disk one\n").unwrap();
        std::fs::create_dir(root.join(".git")).unwrap();
        std::fs::write(root.join(".git/config"), "[core]\n").unwrap();
        let files = Arc::new(Buffers {
            buffer: "buffer one\n".into(),
            ..Buffers::default()
        });
        let mut ctx = ToolContext::new(&root);
        ctx.home = None;
        ctx.files = Some(files.clone());
        (dir, ctx, files)
    }

    #[test]
    fn an_edit_through_the_editor_records_the_buffer_as_before_and_leaves_the_disk() {
        let (_dir, ctx, files) = space();
        let args = r#"{"path":"a.txt","old_string":"one","new_string":"two"}"#;
        let out = run("edit_file", args, &ctx);
        assert!(!out.is_error, "{}", out.text);
        let FileChange::Written { before, after, .. } = &out.files[0] else {
            panic!("{:?}", out.files)
        };
        assert!(matches!(before, Image::Bytes { data, .. } if data == b"buffer one\n"));
        assert!(matches!(after, Image::Bytes { data, .. } if data == b"buffer two\n"));
        let writes = files.writes.lock().unwrap().clone();
        assert_eq!(
            writes,
            vec![(ctx.root.join("a.txt"), "buffer two\n".into())]
        );
        let disk = std::fs::read_to_string(ctx.root.join("a.txt")).unwrap();
        assert_eq!(disk, "disk one\n");
    }

    #[test]
    fn the_editor_path_refuses_what_the_disk_path_refuses() {
        let (_dir, ctx, files) = space();
        let out = run(
            "write_file",
            r#"{"path":".git/config","content":"x"}"#,
            &ctx,
        );
        assert!(out.is_error && out.text.contains(".git"), "{}", out.text);
        let out = run("read_file", r#"{"path":"../outside.txt"}"#, &ctx);
        assert!(out.is_error, "{}", out.text);
        assert!(files.writes.lock().unwrap().is_empty());
        let out = run("read_file", r#"{"path":"a.txt"}"#, &ctx);
        assert!(out.text.contains("buffer one"), "{}", out.text);
    }
}
