//! Stage 5, **resolve**: each path the call touches is taken from the workspace, `~` expanded,
//! `..` and every symlink followed the way the kernel would, a shell glob expanded as bash
//! would, and the result placed in a root it may use — or the reason it may not.

use super::classify::Classified;
use super::validate::Validated;
use crate::sandbox::{Roots, TouchedPath};
use crate::tool::Classification;

/// A classified call with every path resolved and placed.
pub(super) struct Resolved {
    pub call: Validated,
    pub class: Classification,
    pub touched: Vec<TouchedPath>,
}

/// Resolves every path the classification names.
pub(super) fn resolve(classified: Classified, roots: &Roots) -> Resolved {
    let Classified { call, class } = classified;
    let touched = roots.touch_all(&class.paths);
    Resolved {
        call,
        class,
        touched,
    }
}
