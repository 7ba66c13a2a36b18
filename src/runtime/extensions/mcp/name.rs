//! The names MCP tools are offered under: `mcp__<server>__<tool>`, safe for every provider.

use sha2::{Digest, Sha256};

/// Longest function name providers accept.
const NAME_MAX: usize = 64;

/// `mcp__<server>__<tool>` made safe for providers (`[A-Za-z0-9_-]`, at most 64 characters)
/// and unique among `taken`.
pub(crate) fn tool_name(server: &str, tool: &str, taken: &[String]) -> String {
    let raw = format!("mcp__{server}__{tool}");
    let clean: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if clean.len() <= NAME_MAX && !taken.contains(&clean) {
        return clean;
    }
    let digest = Sha256::digest(raw.as_bytes());
    let hex: String = digest[..4].iter().map(|b| format!("{b:02x}")).collect();
    format!("{}_{hex}", &clean[..clean.len().min(NAME_MAX - 9)])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_names_are_safe_short_and_unique() {
        assert_eq!(tool_name("fs", "read", &[]), "mcp__fs__read");
        assert_eq!(tool_name("fs", "a.b/c d", &[]), "mcp__fs__a_b_c_d");
        let long = tool_name("server", &"x".repeat(100), &[]);
        assert_eq!(long.len(), 64);
        assert!(long.starts_with("mcp__server__xxx"));
        let taken = vec!["mcp__fs__a_b".to_string()];
        let second = tool_name("fs", "a.b", &taken);
        assert_ne!(second, "mcp__fs__a_b");
        assert!(second.starts_with("mcp__fs__a_b_"));
        assert_ne!(
            tool_name("s", &"y".repeat(80), &[]),
            tool_name("s", &"y".repeat(81), &[])
        );
    }
}
