//! The acceptance test of `hetsched reproduce`: a quick report of every experiment,
//! rendered in a real headless browser (Debian's `chromium`, installed by
//! `scripts/deps.sh`), shows every image (natural width > 0) and lists every claim of
//! every experiment with a verdict; every section of the quick report says it is quick
//! and which of its verdicts the stored full run differs on.
//!
//! The page itself has no script: the test renders a copy with a few lines that, once
//! the page has loaded, write each image's natural width into the DOM, and reads the
//! DOM the browser dumps.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The first headless-capable browser on the PATH.
fn browser() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .flat_map(|b| std::env::split_paths(&path).map(move |d| d.join(b)))
        .find(|p| p.is_file())
}

const MARK: &str = "<script>window.addEventListener('load',()=>{for(const i of document.images){i.setAttribute('data-natural-width',String(i.naturalWidth))}document.body.setAttribute('data-rendered','yes')});</script>";

/// The DOM of `page` after load, as the browser dumps it.
fn render(browser: &Path, page: &Path, profile: &Path) -> String {
    let mut child = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--virtual-time-budget=20000",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg("--dump-dom")
        .arg(format!("file://{}", page.display()))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the browser starts");
    let mut stdout = child.stdout.take().expect("a pipe");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut stdout, &mut s).map(|_| s)
    });
    // Generous: a loaded 2-core machine; never wait forever.
    let start = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if start.elapsed() > Duration::from_secs(300) {
            let _ = child.kill();
            panic!("the browser did not finish in 300 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    reader.join().expect("the reader").expect("utf-8 DOM")
}

/// The value of attribute `name` in the tag text `tag`.
fn attr<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let key = format!("{name}=\"");
    let start = tag.find(&key)? + key.len();
    tag[start..].split('"').next()
}

/// The tags (up to `>`) that start with `open`.
fn tags<'a>(dom: &'a str, open: &'a str) -> impl Iterator<Item = &'a str> + 'a {
    dom.split(open)
        .skip(1)
        .map(|t| t.split('>').next().unwrap_or(""))
}

#[test]
fn the_quick_report_shows_every_image_and_every_claim_with_a_verdict_in_a_browser() {
    let Some(browser) = browser() else {
        eprintln!("SKIPPED: no chromium on the PATH (scripts/deps.sh installs it; CI has it)");
        return;
    };
    let dir = tempfile::Builder::new()
        .prefix("hetsched-reproduce-test-")
        .tempdir()
        .unwrap();
    let out = dir.path().join("report");
    let all = hetsched_reproduce::select(None).unwrap();
    let outdir = hetsched_util::files::OutDir::create(&out).unwrap();
    let report = hetsched_reproduce::run(&outdir, true, &all, false).unwrap();
    assert!(report.failed().is_empty(), "{:?}", report.failed());

    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(!html.contains("<script"), "the report needs no script");
    // Every section says it is quick, and what the stored full run says of its verdicts.
    for s in &report.sections {
        let full = s
            .full_scale
            .as_ref()
            .unwrap_or_else(|| panic!("{}: not in the stored full run", s.paper));
        let label = s.quick_label(&report).unwrap();
        assert!(label.starts_with("Quick run:") && label.ends_with(&full.sentence()));
    }
    let sections = html.matches("<section id=").count();
    assert_eq!(sections, report.sections.len());
    assert_eq!(
        html.matches("<p class=\"quick\"><b>Quick run:").count(),
        sections
    );
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert_eq!(md.matches("\n**Quick run:").count(), sections, "{md}");
    let page = out.join("rendered.html");
    std::fs::write(&page, html.replace("</body>", &format!("{MARK}</body>"))).unwrap();
    let dom = render(&browser, &page, &dir.path().join("profile"));
    assert!(
        dom.contains("data-rendered=\"yes\""),
        "the page did not load:\n{dom}"
    );

    // Every image loads, and every figure's images are on the page.
    let widths: Vec<(&str, &str)> = tags(&dom, "<img ")
        .map(|t| {
            (
                attr(t, "src").unwrap_or("?"),
                attr(t, "data-natural-width").unwrap_or("?"),
            )
        })
        .collect();
    let figures: usize = report
        .sections
        .iter()
        .filter_map(|s| s.result.as_ref().ok())
        .flat_map(|r| &r.figures)
        .map(|f| f.images.len())
        .sum();
    assert!(figures > 0);
    assert_eq!(widths.len(), figures, "{widths:?}");
    for (src, w) in &widths {
        assert!(
            w.parse::<u32>().is_ok_and(|w| w > 0),
            "{src}: natural width {w}"
        );
    }

    // The claims table lists every claim of every experiment, each with a verdict.
    let rows: Vec<(String, String, String)> = tags(&dom, "<tr data-paper=")
        .map(|t| {
            let t = format!("data-paper={t}");
            let get = |n| attr(&t, n).unwrap_or_default().to_string();
            (get("data-paper"), get("data-claim"), get("data-verdict"))
        })
        .collect();
    let mut expected = Vec::new();
    for s in &report.sections {
        let r = s.result.as_ref().unwrap();
        assert!(!r.claims.is_empty(), "{}: no claims", s.paper);
        for c in &r.claims {
            let v = serde_json::to_value(c.verdict).unwrap();
            expected.push((
                c.paper.to_string(),
                c.id.to_string(),
                v.as_str().unwrap().to_string(),
            ));
        }
    }
    assert_eq!(rows, expected);
    for (_, id, v) in &rows {
        assert!(
            ["holds", "partly", "does-not-hold"].contains(&v.as_str()),
            "{id}: verdict {v}"
        );
    }
}
