//! `pspawn -o/-e` while pspawn follows the job: the forwarded output of
//! each process is written by pspawn into the file its pattern names. Each
//! distinct file is opened (and emptied) once and shared by every rank and
//! stream that names it; whole lines are written, so lines of different
//! ranks never mix and nothing is lost.

use std::collections::HashMap;
use std::fs::File;
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::cli::output_pattern::OutputFiles;
use crate::cli::request::AppSpec;
use crate::ops::iof::IofChunk;

/// Whose bytes: namespace, rank, and whether they are stderr.
type Source = (String, u32, bool);

/// Most bytes kept for an unterminated line before it is written anyway.
const MAX_PARTIAL: usize = 1 << 20;

/// The open files of one job's `-o/-e` patterns.
pub(crate) struct FileSink {
    files: OutputFiles,
    /// Where relative names start, per app: (its last rank + 1, directory).
    bases: Vec<(u32, PathBuf)>,
    /// Each open file, by the name it was opened under.
    open: HashMap<PathBuf, usize>,
    /// The open files, each once (by device and inode).
    handles: Vec<(u64, u64, File)>,
    /// Unterminated lines by source.
    partial: HashMap<Source, Vec<u8>>,
}

impl FileSink {
    /// The sink for `files`, relative names taken from each app's working
    /// directory (its --wdir, else ours).
    pub(crate) fn new(files: &OutputFiles, apps: &[AppSpec]) -> FileSink {
        let here = std::env::current_dir().unwrap_or_default();
        let mut end = 0u32;
        let bases = apps
            .iter()
            .map(|a| {
                end = end.saturating_add(a.np);
                (end, a.wdir.as_ref().map_or(here.clone(), |w| here.join(w)))
            })
            .collect();
        FileSink {
            files: files.clone(),
            bases,
            open: HashMap::new(),
            handles: Vec::new(),
            partial: HashMap::new(),
        }
    }

    /// Create (empty) every file of job `nspace`'s `nprocs` ranks now, so a
    /// rank that prints nothing still leaves its file, as srun's do.
    pub(crate) fn open_all(&mut self, nspace: &str, nprocs: u32) -> std::io::Result<()> {
        for rank in 0..nprocs {
            for err in [false, true] {
                self.file_for(&(nspace.to_string(), rank, err))?;
            }
        }
        Ok(())
    }

    /// Write the whole lines of chunk `c` from job `nspace`'s process.
    pub(crate) fn chunk(&mut self, nspace: &str, c: &IofChunk) -> std::io::Result<()> {
        let ns = if c.source.nspace.is_empty() {
            nspace
        } else {
            &c.source.nspace
        };
        let key = (ns.to_string(), c.source.rank, c.is_stderr());
        let mut buf = self.partial.remove(&key).unwrap_or_default();
        buf.extend_from_slice(&c.data);
        let whole = buf.iter().rposition(|b| *b == b'\n').map_or(0, |p| p + 1);
        let cut = if buf.len() - whole > MAX_PARTIAL {
            buf.len()
        } else {
            whole
        };
        let rest = buf.split_off(cut);
        if !rest.is_empty() {
            self.partial.insert(key.clone(), rest);
        }
        if buf.is_empty() {
            return Ok(());
        }
        self.file_for(&key)?.write_all(&buf)
    }

    /// Write what is left of unterminated lines (as they are: byte-exact).
    pub(crate) fn flush(&mut self) -> std::io::Result<()> {
        let mut keys: Vec<Source> = self.partial.keys().cloned().collect();
        keys.sort_unstable();
        for k in keys {
            if let Some(rest) = self.partial.remove(&k) {
                self.file_for(&k)?.write_all(&rest)?;
            }
        }
        Ok(())
    }

    /// The file of `(namespace, rank, stream)`, opened on first use: a name
    /// already open, or a file already open under another name (same
    /// device and inode), is shared, never emptied again.
    fn file_for(&mut self, (ns, rank, err): &Source) -> std::io::Result<&mut File> {
        let name = self.files.pattern(*err).expand(ns, *rank);
        let path = self.base_of(*rank).join(name);
        if let Some(&i) = self.open.get(&path) {
            return Ok(&mut self.handles[i].2);
        }
        let i = match self.already_open(&path) {
            Some(i) => i,
            None => {
                let f = super::shared_dir_file::open_emptied(&path)
                    .map_err(|r| std::io::Error::other(format!("{}: {r}", path.display())))?;
                let m = f.metadata()?;
                self.handles.push((m.dev(), m.ino(), f));
                self.handles.len() - 1
            }
        };
        self.open.insert(path, i);
        Ok(&mut self.handles[i].2)
    }

    /// The open file `path` already names, if any.
    fn already_open(&self, path: &Path) -> Option<usize> {
        let m = std::fs::metadata(path).ok()?;
        self.handles
            .iter()
            .position(|(dev, ino, _)| *dev == m.dev() && *ino == m.ino())
    }

    /// Where rank `rank`'s relative names start.
    fn base_of(&self, rank: u32) -> &Path {
        self.bases
            .iter()
            .find(|(end, _)| rank < *end)
            .or(self.bases.last())
            .map_or(Path::new("."), |(_, d)| d.as_path())
    }
}

/// Empty, before a `--detach` spawn, the files whose names pspawn knows
/// already (no `%j`): the processes then append to them.
pub(crate) fn empty_known_files(files: &OutputFiles, apps: &[AppSpec]) -> std::io::Result<()> {
    let mut sink = FileSink::new(files, apps);
    let nprocs: u32 = apps.iter().map(|a| a.np).sum();
    for rank in 0..nprocs {
        for err in [false, true] {
            if !files.pattern(err).names_job() {
                sink.file_for(&(String::new(), rank, err))?;
            }
        }
    }
    Ok(())
}
