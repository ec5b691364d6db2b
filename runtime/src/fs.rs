//! A container's filesystem in memory: its image's root tree, with volumes mounted over paths.
//! A [`Volume`] is a shared handle, so an `emptyDir` mounted into two containers of a pod is
//! one tree both see; ConfigMap, Secret and downward-API volumes are mounted read-only.
//!
//! Paths given to [`Fs`] are absolute; `.` and `..` are resolved here, relative paths are the
//! shell's business (it knows its working directory). Errors print as busybox's strerror.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

/// A failed file operation, worded as the C library's strerror.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FsError {
    #[error("No such file or directory")]
    NotFound,
    #[error("Not a directory")]
    NotADirectory,
    #[error("Is a directory")]
    IsADirectory,
    #[error("Read-only file system")]
    ReadOnly,
    #[error("File exists")]
    Exists,
    #[error("Directory not empty")]
    NotEmpty,
}

/// One node of a tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Node {
    File(Vec<u8>),
    Dir(BTreeMap<String, Node>),
}

impl Node {
    pub fn dir() -> Node {
        Node::Dir(BTreeMap::new())
    }
}

/// What [`Fs::stat`] and [`Fs::list`] tell of an entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub name: String,
    pub is_dir: bool,
    /// Bytes of a file (0 for a directory).
    pub size: u64,
}

/// A tree that can be mounted, shared by every container that mounts it.
#[derive(Debug, Clone)]
pub struct Volume(Arc<Mutex<Node>>);

impl Default for Volume {
    fn default() -> Self {
        Volume::empty()
    }
}

impl Volume {
    /// An empty directory (`emptyDir`).
    pub fn empty() -> Volume {
        Volume(Arc::new(Mutex::new(Node::dir())))
    }

    /// A directory holding `files` (paths relative to the volume, parents created), as a
    /// ConfigMap, Secret or downward-API volume shows its keys.
    pub fn from_files<P: AsRef<str>>(files: impl IntoIterator<Item = (P, Vec<u8>)>) -> Volume {
        let v = Volume::empty();
        {
            let mut root = v.lock();
            for (path, data) in files {
                let parts = split(path.as_ref());
                if let Some((last, dirs)) = parts.split_last() {
                    let mut dir = &mut *root;
                    for d in dirs {
                        let Node::Dir(entries) = dir else { break };
                        dir = entries.entry(d.clone()).or_insert_with(Node::dir);
                    }
                    if let Node::Dir(entries) = dir {
                        entries.insert(last.clone(), Node::File(data));
                    }
                }
            }
        }
        v
    }

    fn lock(&self) -> MutexGuard<'_, Node> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether two handles are the same volume.
    pub fn same(&self, other: &Volume) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

#[derive(Debug, Clone)]
struct Mount {
    at: Vec<String>,
    volume: Volume,
    read_only: bool,
}

/// A container's view: its root tree and the volumes mounted into it. Cheap to clone; clones
/// share the files (a process and the servers it started see the same tree).
#[derive(Debug, Clone)]
pub struct Fs {
    root: Volume,
    /// Longest mount path first.
    mounts: Arc<Vec<Mount>>,
}

/// The components of an absolute path, `.` and `..` resolved.
pub fn split(path: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                out.pop();
            }
            p => out.push(p.to_string()),
        }
    }
    out
}

/// `path` made absolute against `cwd`, normalized (`/a/b/../c` → `/a/c`).
pub fn absolute(cwd: &str, path: &str) -> String {
    let joined = if path.starts_with('/') {
        path.to_string()
    } else {
        format!("{cwd}/{path}")
    };
    format!("/{}", split(&joined).join("/"))
}

impl Fs {
    /// A filesystem whose root is `root` (see [`crate::root_fs`] for an image's).
    pub fn new(root: Node) -> Fs {
        Fs {
            root: Volume(Arc::new(Mutex::new(root))),
            mounts: Arc::new(Vec::new()),
        }
    }

    /// Mount `volume` at `path` (created in the root tree when missing), before the container
    /// starts.
    pub fn mount(&mut self, path: &str, volume: Volume, read_only: bool) {
        let at = split(path);
        let _ = self.mkdir(path, true);
        let mut mounts: Vec<Mount> = self.mounts.as_ref().clone();
        mounts.retain(|m| m.at != at);
        mounts.push(Mount {
            at,
            volume,
            read_only,
        });
        mounts.sort_by_key(|m| std::cmp::Reverse(m.at.len()));
        self.mounts = Arc::new(mounts);
    }

    /// The volume holding `path`, whether it is read-only, and the path inside it.
    fn resolve(&self, path: &str) -> (Volume, bool, Vec<String>) {
        let parts = split(path);
        for m in self.mounts.iter() {
            if parts.len() >= m.at.len() && parts[..m.at.len()] == m.at[..] {
                return (m.volume.clone(), m.read_only, parts[m.at.len()..].to_vec());
            }
        }
        (self.root.clone(), false, parts)
    }

    fn with_node<T>(
        &self,
        path: &str,
        f: impl FnOnce(&Node) -> Result<T, FsError>,
    ) -> Result<T, FsError> {
        let (vol, _, parts) = self.resolve(path);
        let root = vol.lock();
        let mut node = &*root;
        for p in &parts {
            match node {
                Node::Dir(entries) => node = entries.get(p).ok_or(FsError::NotFound)?,
                Node::File(_) => return Err(FsError::NotADirectory),
            }
        }
        f(node)
    }

    /// Change the directory holding `path`'s last component; `f` gets its entries and the name.
    fn with_parent<T>(
        &self,
        path: &str,
        f: impl FnOnce(&mut BTreeMap<String, Node>, &str) -> Result<T, FsError>,
    ) -> Result<T, FsError> {
        let (vol, read_only, parts) = self.resolve(path);
        let Some((name, dirs)) = parts.split_last() else {
            // The root of a volume: it exists, and is a directory.
            return Err(FsError::Exists);
        };
        if read_only {
            return Err(FsError::ReadOnly);
        }
        let mut root = vol.lock();
        let mut node = &mut *root;
        for d in dirs {
            match node {
                Node::Dir(entries) => node = entries.get_mut(d).ok_or(FsError::NotFound)?,
                Node::File(_) => return Err(FsError::NotADirectory),
            }
        }
        match node {
            Node::Dir(entries) => f(entries, name),
            Node::File(_) => Err(FsError::NotADirectory),
        }
    }

    /// A file's content.
    pub fn read(&self, path: &str) -> Result<Vec<u8>, FsError> {
        self.with_node(path, |n| match n {
            Node::File(data) => Ok(data.clone()),
            Node::Dir(_) => Err(FsError::IsADirectory),
        })
    }

    /// Write (or, with `append`, append to) a file, creating it; its directory must exist.
    pub fn write(&self, path: &str, data: &[u8], append: bool) -> Result<(), FsError> {
        self.with_parent(path, |entries, name| {
            match entries
                .entry(name.to_string())
                .or_insert_with(|| Node::File(Vec::new()))
            {
                Node::Dir(_) => Err(FsError::IsADirectory),
                Node::File(old) => {
                    if !append {
                        old.clear();
                    }
                    old.extend_from_slice(data);
                    Ok(())
                }
            }
        })
    }

    /// Make a directory (with `parents`, `mkdir -p`: every missing parent, and no error when
    /// it exists).
    pub fn mkdir(&self, path: &str, parents: bool) -> Result<(), FsError> {
        if parents {
            let parts = split(path);
            for i in 1..=parts.len() {
                let p = format!("/{}", parts[..i].join("/"));
                match self.stat(&p) {
                    Ok(e) if e.is_dir => continue,
                    Ok(_) => return Err(FsError::NotADirectory),
                    Err(_) => self.mkdir(&p, false)?,
                }
            }
            return Ok(());
        }
        self.with_parent(path, |entries, name| {
            if entries.contains_key(name) {
                return Err(FsError::Exists);
            }
            entries.insert(name.to_string(), Node::dir());
            Ok(())
        })
    }

    /// Remove a file, or with `recursive` a directory and what it holds; an empty directory
    /// goes without it (`rmdir`).
    pub fn remove(&self, path: &str, recursive: bool) -> Result<(), FsError> {
        self.with_parent(path, |entries, name| match entries.get(name) {
            None => Err(FsError::NotFound),
            Some(Node::Dir(d)) if !recursive && !d.is_empty() => Err(FsError::IsADirectory),
            Some(_) => {
                entries.remove(name);
                Ok(())
            }
        })
    }

    /// What `path` is.
    pub fn stat(&self, path: &str) -> Result<Entry, FsError> {
        let name = split(path).pop().unwrap_or_else(|| "/".into());
        self.with_node(path, |n| Ok(entry(&name, n)))
    }

    /// The entries of a directory, by name; a file lists as itself.
    pub fn list(&self, path: &str) -> Result<Vec<Entry>, FsError> {
        let name = split(path).pop().unwrap_or_else(|| "/".into());
        self.with_node(path, |n| match n {
            Node::Dir(entries) => Ok(entries.iter().map(|(k, v)| entry(k, v)).collect()),
            file => Ok(vec![entry(&name, file)]),
        })
    }

    pub fn exists(&self, path: &str) -> bool {
        self.stat(path).is_ok()
    }

    pub fn is_dir(&self, path: &str) -> bool {
        self.stat(path).is_ok_and(|e| e.is_dir)
    }
}

fn entry(name: &str, n: &Node) -> Entry {
    match n {
        Node::File(d) => Entry {
            name: name.to_string(),
            is_dir: false,
            size: d.len() as u64,
        },
        Node::Dir(_) => Entry {
            name: name.to_string(),
            is_dir: true,
            size: 0,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_directories_and_errors() {
        let fs = Fs::new(Node::dir());
        fs.mkdir("/tmp", false).unwrap();
        assert_eq!(fs.mkdir("/tmp", false), Err(FsError::Exists));
        fs.write("/tmp/a", b"x", false).unwrap();
        fs.write("/tmp/a", b"y", true).unwrap();
        assert_eq!(fs.read("/tmp/./a").unwrap(), b"xy");
        assert_eq!(fs.read("/tmp/b"), Err(FsError::NotFound));
        assert_eq!(fs.read("/tmp"), Err(FsError::IsADirectory));
        assert_eq!(fs.write("/nope/a", b"", false), Err(FsError::NotFound));
        assert_eq!(fs.read("/tmp/a/b"), Err(FsError::NotADirectory));
        fs.mkdir("/x/y/z", true).unwrap();
        assert!(fs.is_dir("/x/y"));
        assert_eq!(fs.remove("/x", false), Err(FsError::IsADirectory));
        fs.remove("/x", true).unwrap();
        assert!(!fs.exists("/x"));
        fs.remove("/tmp/a", false).unwrap();
        assert_eq!(fs.remove("/tmp/a", false), Err(FsError::NotFound));
        assert_eq!(absolute("/usr/bin", "../lib/./x"), "/usr/lib/x");
        assert_eq!(absolute("/", "/etc/"), "/etc");
    }

    #[test]
    fn volumes_are_shared_and_read_only_ones_refuse_writes() {
        let shared = Volume::empty();
        let mut a = Fs::new(Node::dir());
        let mut b = Fs::new(Node::dir());
        a.mount("/usr/share/nginx/html", shared.clone(), false);
        b.mount("/pod-data", shared, false);
        b.write("/pod-data/index.html", b"hi", false).unwrap();
        assert_eq!(a.read("/usr/share/nginx/html/index.html").unwrap(), b"hi");
        let names: Vec<String> = a
            .list("/usr/share/nginx")
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect();
        assert_eq!(names, ["html"]);
        let config = Volume::from_files([
            ("game.properties", b"lives=3".to_vec()),
            ("ui/color", b"red".to_vec()),
        ]);
        a.mount("/etc/config", config, true);
        assert_eq!(a.read("/etc/config/ui/color").unwrap(), b"red");
        assert_eq!(a.write("/etc/config/x", b"", false), Err(FsError::ReadOnly));
        assert_eq!(
            a.remove("/etc/config/game.properties", false),
            Err(FsError::ReadOnly)
        );
        // The root tree of one container is its own.
        a.write("/tmp-a", b"", false).unwrap();
        assert!(!b.exists("/tmp-a"));
    }
}
