//! Stable codes: enums whose variants spell strings the wire, `--json` and exit messages
//! show (the agent's failure codes, warnings). A leaf: the session decision and the agent
//! both name warnings from here.

/// Defines a code enum whose variants spell stable strings: `as_str`, `Display`, `FromStr`,
/// serde as that string, comparison with `&str` and `ALL` (every variant, for tests).
macro_rules! stable_codes {
    (
        $(#[$meta:meta])*
        $name:ident ($what:literal) {
            $( $(#[$vmeta:meta])* $variant:ident => $text:literal, )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $( $(#[$vmeta])* $variant, )*
        }

        impl $name {
            /// Every code, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)*];

            /// The stable code.
            pub fn as_str(self) -> &'static str {
                match self {
                    $( $name::$variant => $text, )*
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl std::str::FromStr for $name {
            type Err = UnknownCode;

            fn from_str(s: &str) -> Result<$name, UnknownCode> {
                match s {
                    $( $text => Ok($name::$variant), )*
                    _ => Err(UnknownCode {
                        kind: $what,
                        code: s.to_string(),
                    }),
                }
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<$name, D::Error> {
                let s = String::deserialize(d)?;
                s.parse().map_err(serde::de::Error::custom)
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.as_str() == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.as_str() == *other
            }
        }

        impl From<$name> for String {
            fn from(c: $name) -> String {
                c.as_str().to_string()
            }
        }
    };
}
pub(crate) use stable_codes;

/// A string that names no code of its kind.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {kind} code `{code}`")]
pub struct UnknownCode {
    /// `failure` or `warning`.
    pub kind: &'static str,
    /// The string given.
    pub code: String,
}

stable_codes! {
    /// What a `TurnEvent::Warning` (or a bridge `warning` line) is about. Stable strings, as
    /// the wire shows them.
    WarningCode ("warning") {
        /// Commands are not confined.
        Sandbox => "sandbox",
        /// Calls interrupted by a crash are offered again.
        ReplayingInterruptedCalls => "replaying_interrupted_calls",
        /// The provider is retried.
        Retrying => "retrying",
        /// A command arrived that nothing waits for.
        UnexpectedCommand => "unexpected_command",
        /// An edit of the plan named steps it does not have.
        UnknownStep => "unknown_step",
        /// An edit would leave the plan empty.
        EmptyPlan => "empty_plan",
        /// A step left running by a dead process runs again.
        StepRerun => "step_rerun",
        /// A layer of a plan run with `--width` above 1 outside a git repository with a commit:
        /// its steps run side by side in the workspace itself, not isolated in worktrees.
        LayerUnisolated => "layer_unisolated",
        /// A hook failed (not blocking), said something for the user, or a rule could not
        /// be saved.
        Hook => "hook",
        /// A skill file was skipped.
        SkillSkipped => "skill_skipped",
        /// A project instructions file cannot be read.
        InstructionsUnreadable => "instructions_unreadable",
        /// A project instructions file was left out: it links outside the workspace, or a
        /// read denial covers it.
        InstructionsSkipped => "instructions_skipped",
        /// An MCP server failed to start or stopped.
        McpServerFailed => "mcp_server_failed",
        /// A language server is missing, failed to start or stopped.
        LspServerFailed => "lsp_server_failed",
        /// The transcript is compacted (`TurnEvent::Compacting` on the wire).
        Compacting => "compacting",
        /// A compaction failed (`TurnEvent::CompactionFailed` on the wire).
        CompactionFailed => "compaction_failed",
        /// The bridge: the session id is unknown and the key matched none.
        SessionNotFoundStartingNew => "session_not_found_starting_new",
        /// The bridge: a continuation came without a session id and the key matched none.
        SessionIdMissingStartingFresh => "session_id_missing_starting_fresh",
        /// The bridge: the caller's history parted from the session's; a fork continues.
        HistoryDiverged => "history_diverged",
        /// The bridge: non-text content parts were left out.
        ContentPartsDropped => "content_parts_dropped",
        /// The server could not stream the request; it was answered without streaming.
        NotStreamed => "not_streamed",
        /// The server reports no usage; token counts are estimated.
        UsageEstimated => "usage_estimated",
        /// The reply hit the output token limit (`finish_reason: length`) and is incomplete.
        ReplyCut => "reply_cut",
        /// The system prompt and tool definitions take a large share of the context window.
        PromptLarge => "prompt_large",
        /// A message queued to steer the turn (Alt-Enter in the TUI) went in at this tool
        /// boundary, before the next model call.
        Steered => "steered",
        /// The server cut the reply short (output limit, `response.incomplete`); it is kept,
        /// marked with its stop reason.
        ReplyTruncated => "reply_truncated",
        /// The model refused to answer.
        Refused => "refused",
        /// Reasoning from another provider or model was left out of the request.
        ReasoningLeftOut => "reasoning_left_out",
        /// The workspace's hooks, allow rules and skills are not used: it is not trusted
        /// (or changed since it was); the message says what it declares and how to trust it.
        WorkspaceUntrusted => "workspace_untrusted",
        /// The server refused the structured-output option (`run --output-schema`); it is
        /// sent without it from now on and the answer is still validated by neocode.
        StructuredOutputRefused => "structured_output_refused",
        /// The model's answer is in while sub-agents it started in the background still run:
        /// the turn ends when they do (cancelling it cancels them).
        SubagentsRunning => "subagents_running",
    }
}
