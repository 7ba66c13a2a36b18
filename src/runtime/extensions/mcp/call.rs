//! Calling a server's tool: the arguments, the time limit and cancel flag, the result made
//! text and images for the model, and the provider-safe tool names.

use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine;
use rmcp::model::{CallToolRequestParams, ContentBlock, ResourceContents};
use rmcp::service::ServiceError;
use serde_json::{Value, json};

use super::error::ArgumentsError;
use super::server::{Slot, connect, secs};
use super::status::{McpImage, McpOutput, McpTool, ServerState};
use crate::runtime::cancel::CancelFlag;

/// Bytes of a call's text kept for the model.
const TEXT_CAP: usize = 64 * 1024;
/// Bytes of one image kept (larger ones are refused: the model could not use them anyway).
const IMAGE_CAP: usize = 10 * 1024 * 1024;

pub(super) fn parse_arguments(
    arguments: &str,
) -> Result<Option<serde_json::Map<String, Value>>, ArgumentsError> {
    if arguments.trim().is_empty() {
        return Ok(None);
    }
    match serde_json::from_str::<Value>(arguments) {
        Ok(Value::Object(m)) => Ok(Some(m)),
        Ok(Value::Null) => Ok(None),
        Ok(_) => Err(ArgumentsError::NotAnObject),
        Err(e) => Err(ArgumentsError::NotJson(e.to_string())),
    }
}

pub(super) async fn call(
    slot: Arc<Slot>,
    tool: McpTool,
    args: Option<serde_json::Map<String, Value>>,
    cancel: CancelFlag,
) -> McpOutput {
    let started = Instant::now();
    let meta = |ok: bool| {
        json!({
            "mcp_server": tool.server,
            "mcp_tool": tool.tool,
            "duration_ms": started.elapsed().as_millis() as u64,
            "ok": ok,
        })
    };
    let peer = match connect(&slot).await {
        Ok(p) => p,
        Err(e) => return McpOutput::error(e.to_string(), meta(false)),
    };
    let mut params = CallToolRequestParams::new(tool.tool.clone());
    params.arguments = args;
    let timeout = slot.cfg.tool_timeout;
    let cancelled = async {
        while !cancel.is_cancelled() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    // Dropping the call future on timeout or cancel makes rmcp send `notifications/cancelled`.
    let outcome = tokio::select! {
        r = tokio::time::timeout(timeout, peer.call_tool(params)) => r,
        () = cancelled => {
            return McpOutput::error("cancelled by the user", meta(false));
        }
    };
    match outcome {
        Err(_) => McpOutput::error(
            format!(
                "`{}` timed out after {} s (tool_timeout_sec of server `{}`)",
                tool.name,
                secs(timeout),
                tool.server
            ),
            meta(false),
        ),
        Ok(Ok(result)) => {
            let mut out = convert(&result.content, result.structured_content.as_ref());
            out.is_error = result.is_error.unwrap_or(false);
            out.metadata = meta(!out.is_error);
            out
        }
        Ok(Err(ServiceError::McpError(e))) => McpOutput::error(
            format!(
                "MCP server `{}` refused the call: {}",
                tool.server, e.message
            ),
            meta(false),
        ),
        Ok(Err(e))
            if !matches!(
                e,
                ServiceError::TransportClosed | ServiceError::TransportSend(_)
            ) && !peer.is_transport_closed() =>
        {
            McpOutput::error(
                format!("the call to MCP server `{}` failed: {e}", tool.server),
                meta(false),
            )
        }
        Ok(Err(e)) => {
            // The transport is gone: the server died during the call.
            let mut live = slot.live.lock().await;
            let why = match live.take() {
                Some(mut l) => {
                    let why = l
                        .died(&match slot.cfg.remote {
                            Some(_) => format!(
                                "lost its connection during a call to `{}` ({})",
                                tool.tool,
                                super::remote::cause(&e)
                            ),
                            None => format!("exited during a call to `{}`", tool.tool),
                        })
                        .await;
                    l.stop();
                    why
                }
                None => format!("{e}"),
            };
            slot.set(|s| s.state = ServerState::Crashed(why.clone()));
            let text = if slot.cfg.remote.is_some() {
                format!(
                    "MCP server `{}` {why}. It will be reconnected on its next use.",
                    tool.server
                )
            } else {
                format!(
                    "MCP server `{}` crashed: {why}. It will be started again on its next use.",
                    tool.server
                )
            };
            McpOutput::error(text, meta(false))
        }
    }
}

/// Text and images of a result. Content the model cannot use here (audio, binary resources)
/// is named, not dropped silently.
fn convert(content: &[ContentBlock], structured: Option<&Value>) -> McpOutput {
    let mut text: Vec<String> = Vec::new();
    let mut images = Vec::new();
    for block in content {
        match block {
            ContentBlock::Text(t) => text.push(t.text.clone()),
            ContentBlock::Image(img) => {
                match base64::engine::general_purpose::STANDARD.decode(img.data.trim()) {
                    Ok(data) if data.len() <= IMAGE_CAP => {
                        text.push(format!("[image: {}, {} bytes]", img.mime_type, data.len()));
                        images.push(McpImage {
                            mime_type: img.mime_type.clone(),
                            data,
                        });
                    }
                    Ok(data) => text.push(format!(
                        "[image omitted: {}, {} bytes is over the {} MiB limit]",
                        img.mime_type,
                        data.len(),
                        IMAGE_CAP >> 20
                    )),
                    Err(_) => text.push(format!(
                        "[image omitted: {} data is not base64]",
                        img.mime_type
                    )),
                }
            }
            ContentBlock::Audio(a) => text.push(format!("[audio omitted: {}]", a.mime_type)),
            ContentBlock::Resource(r) => match &r.resource {
                ResourceContents::TextResourceContents { uri, text: t, .. } => {
                    text.push(format!("[resource {uri}]\n{t}"));
                }
                ResourceContents::BlobResourceContents { uri, mime_type, .. } => {
                    text.push(format!(
                        "[binary resource omitted: {uri} ({})]",
                        mime_type.as_deref().unwrap_or("unknown type")
                    ))
                }
                _ => text.push("[resource of an unknown kind omitted]".to_string()),
            },
            ContentBlock::ResourceLink(l) => {
                text.push(format!("[resource link: {} {}]", l.name, l.uri))
            }
            #[allow(unreachable_patterns)]
            _ => text.push("[content of an unknown kind omitted]".to_string()),
        }
    }
    if text.is_empty()
        && let Some(v) = structured
    {
        text.push(v.to_string());
    }
    let mut text = text.join("\n");
    if text.len() > TEXT_CAP {
        let total = text.len();
        let cut = text.floor_char_boundary(TEXT_CAP);
        text.truncate(cut);
        text.push_str(&format!("\n[output cut: {cut} of {total} bytes kept]"));
    }
    McpOutput {
        text,
        images,
        is_error: false,
        metadata: Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_keep_text_images_and_name_the_rest() {
        let png = base64::engine::general_purpose::STANDARD.encode([137u8, 80, 78, 71]);
        let out = convert(
            &[
                ContentBlock::text("hello"),
                ContentBlock::image(png, "image/png"),
                ContentBlock::image("%%%", "image/png"),
                ContentBlock::audio("AAAA", "audio/wav"),
                ContentBlock::embedded_text("file:///a", "inside"),
            ],
            None,
        );
        assert_eq!(out.images.len(), 1);
        assert_eq!(out.images[0].data, vec![137, 80, 78, 71]);
        assert_eq!(
            out.text,
            "hello\n[image: image/png, 4 bytes]\n[image omitted: image/png data is not base64]\n[audio omitted: audio/wav]\n[resource file:///a]\ninside"
        );
        let out = convert(&[], Some(&json!({"a": 1})));
        assert_eq!(out.text, "{\"a\":1}");
        let out = convert(&[ContentBlock::text("é".repeat(TEXT_CAP))], None);
        assert!(out.text.len() < TEXT_CAP + 100);
        assert!(out.text.ends_with(&format!(
            "[output cut: {TEXT_CAP} of {} bytes kept]",
            2 * TEXT_CAP
        )));
    }

    #[test]
    fn arguments_must_be_an_object() {
        assert_eq!(parse_arguments("").unwrap(), None);
        assert!(parse_arguments("{\"a\":1}").unwrap().is_some());
        assert!(parse_arguments("[1]").is_err());
        assert!(
            parse_arguments("{")
                .unwrap_err()
                .to_string()
                .contains("not valid JSON")
        );
    }
}
