//! The guide (`docs/`, an mdBook) and the README hold together: every relative link names a
//! file that exists and, with a `#fragment`, a heading of that file; every chapter is in
//! `docs/SUMMARY.md`. mdBook itself does not check links, so a broken one would only show as a
//! dead link to a reader.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The Markdown files of the guide and the README.
fn pages() -> Vec<PathBuf> {
    let mut pages = vec![Path::new(ROOT).join("README.md")];
    for entry in std::fs::read_dir(Path::new(ROOT).join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            pages.push(path);
        }
    }
    pages.sort();
    pages
}

/// A heading's anchor as GitHub and mdBook make it: lowercased, punctuation but `-` and `_`
/// dropped, spaces made `-`; a repeated one gets `-1`, `-2`, ….
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = BTreeSet::new();
    let mut heading: Option<String> = None;
    for event in Parser::new_ext(text, Options::all()) {
        match event {
            Event::Start(Tag::Heading { .. }) => heading = Some(String::new()),
            Event::Text(t) | Event::Code(t) => {
                if let Some(h) = &mut heading {
                    h.push_str(&t);
                }
            }
            Event::End(TagEnd::Heading(_)) => {
                let h = heading.take().unwrap_or_default();
                let slug: String = h
                    .trim()
                    .to_lowercase()
                    .chars()
                    .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
                    .map(|c| if c == ' ' { '-' } else { c })
                    .collect();
                let n = seen.entry(slug.clone()).or_insert(0);
                out.insert(if *n == 0 {
                    slug.clone()
                } else {
                    format!("{slug}-{n}")
                });
                *n += 1;
            }
            _ => {}
        }
    }
    out
}

/// Every link and image target of a page.
fn links(text: &str) -> Vec<String> {
    Parser::new_ext(text, Options::all())
        .filter_map(|e| match e {
            Event::Start(Tag::Link { dest_url, .. })
            | Event::Start(Tag::Image { dest_url, .. }) => Some(dest_url.to_string()),
            _ => None,
        })
        .collect()
}

#[test]
fn every_relative_link_of_the_guide_and_the_readme_reaches_a_file_and_a_heading() {
    let mut broken = Vec::new();
    let mut checked = 0;
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        for link in links(&text) {
            if link.contains("://") || link.starts_with("mailto:") {
                continue;
            }
            checked += 1;
            let (file, fragment) = match link.split_once('#') {
                Some((f, a)) => (f, Some(a)),
                None => (link.as_str(), None),
            };
            let target = if file.is_empty() {
                page.clone()
            } else {
                page.parent().unwrap().join(file)
            };
            if !target.exists() {
                broken.push(format!("{}: {link}: no such file", page.display()));
                continue;
            }
            if let Some(a) = fragment
                && target.extension().is_some_and(|e| e == "md")
            {
                let there = std::fs::read_to_string(&target).unwrap();
                if !anchors(&there).contains(a) {
                    broken.push(format!("{}: {link}: no such heading", page.display()));
                }
            }
        }
    }
    assert!(
        checked > 100,
        "only {checked} links found: is the parser reading the pages?"
    );
    assert!(
        broken.is_empty(),
        "{} broken:\n{}",
        broken.len(),
        broken.join("\n")
    );
}

#[test]
fn a_broken_link_and_a_missing_heading_are_found() {
    // The control: the checker's own parts see what they must.
    assert!(
        anchors("# The jail\n## Each call runs as its admission says\n## `reasonix check`\n")
            .contains("each-call-runs-as-its-admission-says")
    );
    assert!(anchors("## `reasonix check`\n").contains("reasonix-check"));
    assert!(anchors("## A\n## A\n").contains("a-1"));
    assert_eq!(
        links("see [x](jail.md#the-jail) and [y](https://example.com)"),
        ["jail.md#the-jail", "https://example.com"]
    );
}

#[test]
fn every_chapter_is_in_the_summary_and_every_summary_entry_exists() {
    let docs = Path::new(ROOT).join("docs");
    let summary = std::fs::read_to_string(docs.join("SUMMARY.md")).unwrap();
    let listed: BTreeSet<String> = links(&summary).into_iter().collect();
    for page in pages().iter().filter(|p| p.starts_with(&docs)) {
        let name = page.file_name().unwrap().to_string_lossy().into_owned();
        if name == "SUMMARY.md" {
            continue;
        }
        assert!(
            listed.contains(&name),
            "docs/{name} is not in docs/SUMMARY.md"
        );
    }
    for entry in &listed {
        assert!(
            docs.join(entry).exists(),
            "SUMMARY.md lists {entry}, which does not exist"
        );
    }
}
