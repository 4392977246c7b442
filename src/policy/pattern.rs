//! Path and tool globs: how a pattern as written becomes one absolute glob, and one `GlobSet`
//! per policy that matches every pattern at once.
//!
//! Path globs are built with `literal_separator(true)`: `*` stays within one path component and
//! only `**` crosses `/`, so `/etc/*` does not match `/etc/ssl/certs/x.pem`. Anchoring (see
//! `yaml::PathGlob`):
//!
//! | written        | matches                              |
//! |----------------|--------------------------------------|
//! | `/etc/**`      | as written                           |
//! | `~/.ssh/**`    | under the home folder                |
//! | `**/x`         | as written, at any depth             |
//! | `.env`, `*.pem`| at any depth (`**/.env`), like `.gitignore` |
//! | `src/*.rs`     | under the workspace (`<ws>/src/*.rs`) |
//! | `build/`       | everything below (`build/**`)         |
//!
//! A pattern ending in `/**` also matches the folder itself, so `.git/**` covers `.git`.

use std::path::Path;

use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};

/// Builds one path glob with the matching options used everywhere.
pub(crate) fn path_glob(pattern: &str) -> Result<Glob, globset::Error> {
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
}

/// Turns a path pattern as written into the absolute patterns it stands for.
pub(crate) fn anchor(
    raw: &str,
    workspace: &Path,
    home: Option<&Path>,
) -> Result<Vec<String>, String> {
    let escaped = |p: &Path| -> Result<String, String> {
        p.to_str()
            .map(globset::escape)
            .ok_or_else(|| format!("{} is not valid UTF-8", p.display()))
    };
    let mut pattern = if raw == "~" || raw.starts_with("~/") {
        let home = home.ok_or("no home folder is known, so `~` cannot be expanded")?;
        format!("{}{}", escaped(home)?, &raw[1..])
    } else if raw.starts_with('/') || raw.starts_with("**") {
        raw.to_owned()
    } else if !raw.trim_end_matches('/').contains('/') {
        format!("**/{raw}")
    } else {
        let rel = raw.strip_prefix("./").unwrap_or(raw);
        format!("{}/{rel}", escaped(workspace)?)
    };
    if pattern.ends_with('/') {
        pattern.push_str("**");
    }
    let mut out = vec![pattern.clone()];
    if let Some(folder) = pattern.strip_suffix("/**")
        && !folder.is_empty()
        && folder != "**"
    {
        out.push(folder.to_owned());
    }
    Ok(out)
}

/// Many globs matched at once, each remembering which rule it belongs to.
#[derive(Clone, Debug)]
pub(crate) struct OwnedSet {
    set: GlobSet,
    owner: Vec<usize>,
}

impl OwnedSet {
    /// Builds the set from `(rule index, glob)` pairs.
    pub(crate) fn build(globs: Vec<(usize, Glob)>) -> Result<OwnedSet, globset::Error> {
        let mut builder = GlobSetBuilder::new();
        let mut owner = Vec::with_capacity(globs.len());
        for (rule, glob) in globs {
            builder.add(glob);
            owner.push(rule);
        }
        Ok(OwnedSet {
            set: builder.build()?,
            owner,
        })
    }

    /// Calls `hit` with the rule index of every glob matching `candidate`; a rule may be
    /// reported more than once.
    pub(crate) fn for_each_match(
        &self,
        candidate: &Path,
        scratch: &mut Vec<usize>,
        mut hit: impl FnMut(usize),
    ) {
        self.set.matches_into(candidate, scratch);
        for &i in scratch.iter() {
            hit(self.owner[i]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(raw: &str, path: &str) -> bool {
        let ws = Path::new("/ws");
        let home = Path::new("/home/me");
        anchor(raw, ws, Some(home))
            .unwrap()
            .iter()
            .any(|p| path_glob(p).unwrap().compile_matcher().is_match(path))
    }

    #[test]
    fn single_star_does_not_cross_folders() {
        assert!(matches("/etc/*", "/etc/passwd"));
        assert!(!matches("/etc/*", "/etc/ssl/certs/x.pem"));
        assert!(matches("/etc/**", "/etc/ssl/certs/x.pem"));
    }

    #[test]
    fn bare_names_match_at_any_depth() {
        assert!(matches(".env", "/ws/.env"));
        assert!(matches(".env", "/ws/app/.env"));
        assert!(matches(".env", "/elsewhere/.env"));
        assert!(!matches(".env", "/ws/.env.example"));
        assert!(matches("*.pem", "/ws/a/b/key.pem"));
    }

    #[test]
    fn patterns_with_a_slash_are_anchored_at_the_workspace() {
        assert!(matches("src/*.rs", "/ws/src/main.rs"));
        assert!(!matches("src/*.rs", "/ws/lib/src/main.rs"));
        assert!(!matches("src/*.rs", "/ws/src/a/main.rs"));
        assert!(matches("./src/**", "/ws/src/a/main.rs"));
    }

    #[test]
    fn home_patterns_expand() {
        assert!(matches("~/.ssh/**", "/home/me/.ssh/id_rsa"));
        assert!(matches("~/.ssh/**", "/home/me/.ssh"));
        assert!(!matches("~/.ssh/**", "/ws/.ssh/id_rsa"));
    }

    #[test]
    fn double_star_folders_cover_the_folder_itself() {
        assert!(matches(".git/**", "/ws/.git"));
        assert!(matches(".git/**", "/ws/.git/hooks/pre-commit"));
        assert!(matches("build/", "/ws/build/x.o"));
        assert!(!matches(".git/**", "/ws/.github/x"));
    }

    #[test]
    fn leading_double_star_matches_absolute_paths() {
        assert!(matches("**/.env", "/ws/.env"));
        assert!(matches("**/.env", "/.env"));
    }

    #[test]
    fn workspace_names_with_glob_characters_are_escaped() {
        let ws = Path::new("/w[s]");
        let p = anchor("src/a", ws, None).unwrap();
        let m = path_glob(&p[0]).unwrap().compile_matcher();
        assert!(m.is_match("/w[s]/src/a"));
        assert!(!m.is_match("/ws/src/a"));
    }
}
