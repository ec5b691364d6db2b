//! The image table: placeholder until it lands.

use crate::fs::Node;
use crate::{BoxFuture, Container, Fs, Host};

/// Run a container's main process (see [`crate::run_main`]).
pub fn run<'a>(_c: &'a Container, _fs: Fs, host: &'a mut dyn Host) -> BoxFuture<'a, i32> {
    Box::pin(async move {
        host.wait_signal(None).await;
        0
    })
}

/// The root tree of a fresh container of `image`.
pub fn root_tree(_image: &str) -> Node {
    Node::dir()
}

/// A program of an image that the shell runs by name (`nginx`, `redis-server`...).
pub type Builtin =
    for<'a> fn(&'a [String], &'a Container, Fs, &'a mut dyn Host) -> BoxFuture<'a, i32>;

/// The program `program` of `image`, when the image table knows it.
pub fn builtin(image: &str, program: &str) -> Option<Builtin> {
    let _ = (image, program);
    None
}
