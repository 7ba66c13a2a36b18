//! A fetched body as text the model reads: HTML turned into Markdown (scripts, styles and
//! other non-text parts dropped), text and JSON as they are.

/// Elements whose content is never text a reader sees.
const SKIPPED: &[&str] = &[
    "script", "style", "noscript", "template", "iframe", "svg", "canvas", "object", "embed", "head",
];

/// How the body of `content_type` reads; `None` when it is not text.
pub(super) fn readable(content_type: &str, body: &[u8]) -> Option<String> {
    let mime = content_type.split(';').next().unwrap_or("").trim();
    let text = String::from_utf8_lossy(body);
    if mime == "text/html"
        || mime == "application/xhtml+xml"
        || (mime.is_empty() && looks_html(&text))
    {
        return Some(markdown(&text));
    }
    let texty = mime.is_empty()
        || mime.starts_with("text/")
        || mime.ends_with("+json")
        || mime.ends_with("+xml")
        || matches!(
            mime,
            "application/json"
                | "application/xml"
                | "application/javascript"
                | "application/x-yaml"
                | "application/yaml"
                | "application/toml"
        );
    (texty && !body.contains(&0)).then(|| text.into_owned())
}

fn looks_html(text: &str) -> bool {
    let head = text.trim_start().get(..200).unwrap_or(text.trim_start());
    let head = head.to_ascii_lowercase();
    head.starts_with("<!doctype html") || head.starts_with("<html")
}

/// The page's title and its Markdown.
fn markdown(html: &str) -> String {
    let converter = htmd::HtmlToMarkdown::builder()
        .skip_tags(SKIPPED.to_vec())
        .build();
    let body = converter.convert(html).unwrap_or_default();
    let body = squeeze_blank_lines(&body);
    match title(html) {
        Some(t) if !body.starts_with(&format!("# {t}")) => format!("Title: {t}\n\n{body}"),
        _ => body,
    }
}

fn title(html: &str) -> Option<String> {
    let lower = html.to_ascii_lowercase();
    let start = lower.find("<title")?;
    let open_end = start + lower[start..].find('>')? + 1;
    let end = open_end + lower[open_end..].find("</title")?;
    let t = htmd::convert(&html[open_end..end]).ok()?;
    let t = t.split_whitespace().collect::<Vec<_>>().join(" ");
    (!t.is_empty()).then_some(t)
}

fn squeeze_blank_lines(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut blank = 0;
    for line in s.lines() {
        if line.trim().is_empty() {
            blank += 1;
            if blank > 1 {
                continue;
            }
        } else {
            blank = 0;
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out.trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_becomes_markdown_without_scripts_or_styles() {
        let page = r#"<!DOCTYPE html><html><head><title>The  Guide</title>
            <style>body{color:red}</style><script>alert("x")</script></head>
            <body><h1>Install</h1><p>Run <code>cargo build</code>, then see
            <a href="/docs">the docs</a>.</p><ul><li>one</li><li>two</li></ul>
            <script>track()</script></body></html>"#;
        let md = readable("text/html; charset=utf-8", page.as_bytes()).unwrap();
        assert!(md.starts_with("Title: The Guide\n\n# Install"), "{md}");
        assert!(
            md.contains("Run `cargo build`, then see [the docs](/docs)."),
            "{md}"
        );
        assert!(md.contains("one") && md.contains("two"), "{md}");
        assert!(
            !md.contains("alert") && !md.contains("track") && !md.contains("color"),
            "{md}"
        );
    }

    #[test]
    fn text_and_json_are_kept_and_binary_is_not_text() {
        assert_eq!(readable("text/plain", b"hi\n").unwrap(), "hi\n");
        assert_eq!(
            readable("application/json", b"{\"a\":1}").unwrap(),
            "{\"a\":1}"
        );
        assert!(readable("image/png", b"\x89PNG").is_none());
        assert!(readable("application/octet-stream", b"abc").is_none());
        assert!(readable("text/plain", b"a\0b").is_none());
        assert!(
            readable("", b"<!doctype html><p>x</p>")
                .unwrap()
                .contains('x')
        );
    }
}
