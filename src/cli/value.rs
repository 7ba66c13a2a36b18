//! Why a flag's value was refused, and the parser of counts.

/// Why a flag's value was refused; clap prints it after naming the flag.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ValueError {
    /// A count of zero where one is needed.
    #[error("must be at least 1")]
    Zero,
    /// Not a whole number.
    #[error("'{0}' is not a whole number")]
    NotWhole(String),
    /// Not an amount of dollars.
    #[error("`{0}` is not an amount of dollars, e.g. 2.50")]
    NotDollars(String),
    /// Not a wire API name.
    #[error("`{0}` is not one of chat, responses, anthropic")]
    NotApi(String),
    /// Not an approval policy name.
    #[error("`{0}` is not one of ask, auto-edit, never-ask")]
    NotPolicy(String),
}

/// A count that must be positive (`--limit 0` would print nothing).
pub(crate) fn at_least_one(s: &str) -> Result<usize, ValueError> {
    match s.parse::<usize>() {
        Ok(0) => Err(ValueError::Zero),
        Ok(n) => Ok(n),
        Err(_) => Err(ValueError::NotWhole(s.to_string())),
    }
}
