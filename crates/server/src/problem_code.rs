//! The codes of the HTTP refusals (the `code` of a `problem` body) and the `reason` label of
//! `cortex_http_refused_total` each one is counted under: one table, so a code cannot be
//! spelled one way in the body and another in the metrics.

/// Why the server answered a request itself, before MCP saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProblemCode {
    ForbiddenOrigin,
    SessionNotFound,
    RateLimited,
    TooLarge,
    TooManyCalls,
    BodyTimeout,
    Busy,
    BodyBroken,
    ForbiddenRole,
    MissingKey,
    MalformedKey,
    UnknownKey,
    RevokedKey,
    ExpiredKey,
    ForbiddenScope,
    InvalidHeader,
    Internal,
    NotFound,
    InvalidToken,
    InsufficientScope,
    ForbiddenToken,
    IssuerUnavailable,
}

impl ProblemCode {
    pub const ALL: [ProblemCode; 22] = [
        ProblemCode::ForbiddenOrigin,
        ProblemCode::SessionNotFound,
        ProblemCode::RateLimited,
        ProblemCode::TooLarge,
        ProblemCode::TooManyCalls,
        ProblemCode::BodyTimeout,
        ProblemCode::Busy,
        ProblemCode::BodyBroken,
        ProblemCode::ForbiddenRole,
        ProblemCode::MissingKey,
        ProblemCode::MalformedKey,
        ProblemCode::UnknownKey,
        ProblemCode::RevokedKey,
        ProblemCode::ExpiredKey,
        ProblemCode::ForbiddenScope,
        ProblemCode::InvalidHeader,
        ProblemCode::Internal,
        ProblemCode::NotFound,
        ProblemCode::InvalidToken,
        ProblemCode::InsufficientScope,
        ProblemCode::ForbiddenToken,
        ProblemCode::IssuerUnavailable,
    ];

    /// The code in the answer's body.
    pub fn as_str(self) -> &'static str {
        match self {
            ProblemCode::ForbiddenOrigin => "forbidden_origin",
            ProblemCode::SessionNotFound => "session_not_found",
            ProblemCode::RateLimited => "rate_limited",
            ProblemCode::TooLarge => "too_large",
            ProblemCode::TooManyCalls => "too_many_calls",
            ProblemCode::BodyTimeout => "body_timeout",
            ProblemCode::Busy => "busy",
            ProblemCode::BodyBroken => "body_broken",
            ProblemCode::ForbiddenRole => "forbidden_role",
            ProblemCode::MissingKey => "missing_key",
            ProblemCode::MalformedKey => "malformed_key",
            ProblemCode::UnknownKey => "unknown_key",
            ProblemCode::RevokedKey => "revoked_key",
            ProblemCode::ExpiredKey => "expired_key",
            ProblemCode::ForbiddenScope => "forbidden_scope",
            ProblemCode::InvalidHeader => "invalid_header",
            ProblemCode::Internal => "internal",
            ProblemCode::NotFound => "not_found",
            ProblemCode::InvalidToken => "invalid_token",
            ProblemCode::InsufficientScope => "insufficient_scope",
            ProblemCode::ForbiddenToken => "forbidden_token",
            ProblemCode::IssuerUnavailable => "issuer_unavailable",
        }
    }

    /// The `reason` label it is counted under in `cortex_http_refused_total`, or `None` for the
    /// answers not counted there (a broken body or header, a server fault, a missing page).
    /// Two reasons name the rule rather than the answer, as dashboards already group by them.
    pub fn metric_reason(self) -> Option<&'static str> {
        match self {
            ProblemCode::ForbiddenOrigin => Some("origin"),
            ProblemCode::SessionNotFound => Some("foreign_session"),
            ProblemCode::BodyBroken
            | ProblemCode::InvalidHeader
            | ProblemCode::Internal
            | ProblemCode::NotFound => None,
            code => Some(code.as_str()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn every_code_and_reason_is_distinct() {
        let codes: HashSet<_> = ProblemCode::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(codes.len(), ProblemCode::ALL.len());
        let reasons: Vec<_> = ProblemCode::ALL.iter().filter_map(|c| c.metric_reason()).collect();
        assert_eq!(reasons.iter().collect::<HashSet<_>>().len(), reasons.len());
        for code in ProblemCode::ALL {
            assert!(code.as_str().bytes().all(|b| b.is_ascii_lowercase() || b == b'_'), "{code:?}");
        }
    }

    /// The OAuth guide's table of answers lists codes of this table only.
    #[test]
    fn the_oauth_guide_lists_these_codes() {
        let doc = include_str!("../../../docs/OAUTH.md");
        let listed: Vec<&str> = doc
            .lines()
            .filter(|l| l.starts_with("| 4") || l.starts_with("| 5"))
            .filter_map(|l| l.split('`').nth(1))
            .collect();
        assert!(listed.len() >= 6, "{listed:?}");
        for code in listed {
            assert!(ProblemCode::ALL.iter().any(|c| c.as_str() == code), "docs/OAUTH.md lists {code}");
        }
    }
}
