//! A runbook's steps as the edit and new-item forms take them, in the shape the item page
//! shows them: each step a description line, then its command as lines starting with `$ `
//! (several join into one command over several lines) and its expected outcome as lines
//! starting with `expect:`. Blank lines between steps are allowed and ignored.
//!
//! ```text
//! Drain the node
//! $ kubectl drain node-1 --ignore-daemonsets
//! expect: node-1 cordoned, its pods evicted
//!
//! Restart the kubelet
//! $ sudo systemctl restart kubelet
//! ```
//!
//! A `$` or `expect:` line before any description makes a step without a description, which
//! `memory_store`'s own validation refuses (`steps[0].description`): the form never decides
//! on its own what a step needs.

use serde_json::{Map, Value};

const COMMAND: &str = "$ ";
const EXPECT: &str = "expect:";

/// The steps as the form's text, or `None` when that text could not give them back exactly
/// (a description over several lines, one that starts like a command, a field the format
/// has no line for): the form then keeps them as stored.
pub fn to_text(steps: &Value) -> Option<String> {
    let Value::Array(list) = steps else { return None };
    let mut blocks = Vec::with_capacity(list.len());
    for step in list {
        let part = |name: &str| step.get(name).and_then(Value::as_str);
        let mut block = vec![part("description")?.to_string()];
        block.extend(part("command").into_iter().flat_map(str::lines).map(|l| format!("{COMMAND}{l}")));
        block.extend(
            part("expected_outcome").into_iter().flat_map(str::lines).map(|l| format!("{EXPECT} {l}")),
        );
        blocks.push(block.join("\n"));
    }
    let text = blocks.join("\n\n");
    (from_text(&text) == *steps).then_some(text)
}

/// The steps a form's text makes (see the module doc); what the kind's rules make of them is
/// `memory_store`'s to say.
pub fn from_text(text: &str) -> Value {
    let mut steps: Vec<Map<String, Value>> = Vec::new();
    for line in text.lines() {
        let line = line.trim_end_matches('\r');
        let lead = line.trim_start();
        if lead.trim().is_empty() {
            continue;
        }
        let (field, part) = if let Some(command) = lead.strip_prefix(COMMAND) {
            ("command", command)
        } else if lead.trim_end() == COMMAND.trim_end() {
            // An empty line of a command, whose trailing space an editor dropped.
            ("command", "")
        } else if let Some(outcome) = lead.strip_prefix(EXPECT) {
            ("expected_outcome", outcome.strip_prefix(' ').unwrap_or(outcome))
        } else {
            let mut step = Map::new();
            step.insert("description".to_string(), Value::String(lead.trim_end().to_string()));
            steps.push(step);
            continue;
        };
        if steps.is_empty() {
            steps.push(Map::new());
        }
        let Some(step) = steps.last_mut() else { continue };
        match step.get_mut(field) {
            Some(Value::String(so_far)) => {
                so_far.push('\n');
                so_far.push_str(part);
            }
            _ => {
                step.insert(field.to_string(), Value::String(part.to_string()));
            }
        }
    }
    Value::Array(steps.into_iter().map(Value::Object).collect())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::json;

    /// The restart runbook of a Kubernetes node, as an agent stores it.
    pub(crate) fn runbook() -> Value {
        json!([
            {"description": "Cordon and drain the node",
             "command": "kubectl cordon node-1\nkubectl drain node-1 --ignore-daemonsets --delete-emptydir-data",
             "expected_outcome": "node/node-1 cordoned\nevicting pod … evicted"},
            {"description": "Restart the kubelet", "command": "sudo systemctl restart kubelet"},
            {"description": "Check that the node is Ready again", "command": "kubectl get node node-1 -o wide",
             "expected_outcome": "STATUS Ready"},
            {"description": "Let pods be scheduled on it again", "command": "kubectl uncordon node-1"}
        ])
    }

    #[test]
    fn a_runbook_reads_as_lines_and_back_exactly() {
        let text = to_text(&runbook()).expect("the steps fit the format");
        assert!(text.starts_with(
            "Cordon and drain the node\n$ kubectl cordon node-1\n$ kubectl drain node-1 --ignore-daemonsets --delete-emptydir-data\nexpect: node/node-1 cordoned\nexpect: evicting pod … evicted\n\nRestart the kubelet\n$ sudo"
        ), "{text}");
        assert_eq!(from_text(&text), runbook());
        // As a browser may send it back: CRLF, and spaces on the blank lines between steps.
        let sent = text.replace('\n', "\r\n").replace("\r\n\r\n", "\r\n\r\n  \r\n");
        assert_eq!(from_text(&sent), runbook());
    }

    #[test]
    fn a_command_before_any_description_is_a_step_without_one() {
        let steps = from_text("$ rm -rf /tmp/cache\nexpect: nothing left\nRestart");
        assert_eq!(
            steps,
            json!([{"command": "rm -rf /tmp/cache", "expected_outcome": "nothing left"},
            {"description": "Restart"}])
        );
    }

    #[test]
    fn steps_the_lines_cannot_hold_exactly_are_kept_as_stored() {
        for steps in [
            json!([{"description": "Drain\nthe node"}]),
            json!([{"description": "$ looks like a command"}]),
            json!([{"description": "expect: looks like an outcome"}]),
            json!([{"description": "Restart", "notes": "not a field of the format"}]),
            json!([{"description": "Restart", "command": ""}]),
            json!("not a list"),
        ] {
            assert_eq!(to_text(&steps), None, "{steps}");
        }
        assert_eq!(to_text(&json!([])), Some(String::new()));
    }
}
