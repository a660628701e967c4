//! The tools the server offers, as one closed set: each says its wire name and the role a
//! key needs to call it. The match in [`Tool::role`] is exhaustive, so a new tool does not
//! compile until it says its role; a name outside the set is no tool at all, refused before
//! any role is asked about (an unknown name can never fall through to a default role).

use crate::api_key::Role;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tool {
    Store,
    Find,
}

impl Tool {
    /// Every tool, in the order `tools/list` shows them.
    pub const ALL: [Tool; 2] = [Tool::Store, Tool::Find];

    /// The name a client calls it by.
    pub const fn name(self) -> &'static str {
        match self {
            Tool::Store => "memory_store",
            Tool::Find => "memory_find",
        }
    }

    /// The tool of that exact name; `None` for anything else.
    pub fn parse(name: &str) -> Option<Tool> {
        Tool::ALL.into_iter().find(|t| t.name() == name)
    }

    /// The role a key needs to call it: whether it changes the memory or only reads it.
    pub const fn role(self) -> Role {
        match self {
            Tool::Store => Role::Write,
            Tool::Find => Role::Read,
        }
    }

    /// The JSON Schema of its arguments, generated from their definitions
    /// ([`crate::find::args`], [`crate::item::args`]), in the subset every model API accepts.
    pub fn input_schema(self) -> serde_json::Value {
        match self {
            Tool::Store => crate::item::store_schema(),
            Tool::Find => crate::find::args::find_schema(),
        }
    }

    /// The names of every tool, for a refusal that lists them.
    pub fn names() -> String {
        Tool::ALL.map(Tool::name).join(", ")
    }
}

impl std::fmt::Display for Tool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_tool_is_found_by_its_exact_name_only() {
        for tool in Tool::ALL {
            assert_eq!(Tool::parse(tool.name()), Some(tool));
            assert_eq!(Tool::parse(&tool.name().to_uppercase()), None);
            assert_eq!(Tool::parse(&format!(" {}", tool.name())), None);
        }
        assert_eq!(Tool::parse("memory_delete"), None);
    }

    #[test]
    fn only_reading_tools_are_open_to_read_keys() {
        assert_eq!(Tool::Store.role(), Role::Write);
        assert_eq!(Tool::Find.role(), Role::Read);
        assert!(!Role::Read.covers(Tool::Store.role()));
    }
}
