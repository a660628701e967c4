//! MCP sessions, each bound to the key that opened it: rmcp's in-memory session manager, and
//! beside it who owns each session. The gate refuses another key's request naming a session
//! as if the session did not exist (it neither ends nor touches it), and a key holds at most
//! a set number of sessions: opening one more ends its oldest, so a client that never sends
//! `DELETE` cannot grow the server's memory, and one that does keeps working (an MCP client
//! whose session ended gets 404 and initializes again).

use super::Metrics;
use futures::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::SessionId;
use rmcp::transport::streamable_http_server::SessionManager;
use rmcp::transport::streamable_http_server::session::ServerSseMessage;
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError,
};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[derive(Default)]
struct Owners {
    next: u64,
    /// Session → (its key, its order of opening).
    by_id: HashMap<SessionId, (String, u64)>,
    /// Key → its sessions, oldest first.
    by_key: HashMap<String, BTreeMap<u64, SessionId>>,
}

impl Owners {
    fn forget(&mut self, id: &str) {
        let Some((key, order)) = self.by_id.remove(id) else { return };
        if let Some(sessions) = self.by_key.get_mut(&key) {
            sessions.remove(&order);
            if sessions.is_empty() {
                self.by_key.remove(&key);
            }
        }
    }
}

pub struct KeyedSessions {
    inner: LocalSessionManager,
    owners: Mutex<Owners>,
    max_per_key: usize,
    metrics: Arc<Metrics>,
}

impl KeyedSessions {
    /// At most `max_per_key` sessions per key, each ended after `idle` without a request.
    pub fn new(max_per_key: usize, idle: Duration, metrics: Arc<Metrics>) -> KeyedSessions {
        let mut inner = LocalSessionManager::default();
        inner.session_config.keep_alive = Some(idle);
        KeyedSessions { inner, owners: Mutex::default(), max_per_key, metrics }
    }

    fn owners(&self) -> std::sync::MutexGuard<'_, Owners> {
        self.owners.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The key a session belongs to (`None`: no such session, or not bound yet).
    pub fn owner(&self, id: &str) -> Option<String> {
        self.owners().by_id.get(id).map(|(key, _)| key.clone())
    }

    /// Binds a session just opened to `key`; ends the key's oldest sessions beyond its cap.
    pub fn bind(self: &Arc<Self>, id: &str, key: &str) {
        let evicted = {
            let mut owners = self.owners();
            let order = owners.next;
            owners.next += 1;
            let id: SessionId = id.into();
            owners.by_id.insert(id.clone(), (key.to_string(), order));
            let sessions = owners.by_key.entry(key.to_string()).or_default();
            sessions.insert(order, id);
            let excess = sessions.len().saturating_sub(self.max_per_key);
            let evicted: Vec<SessionId> = sessions.values().take(excess).cloned().collect();
            for old in &evicted {
                owners.forget(old);
            }
            self.metrics.set_sessions_open(owners.by_id.len());
            evicted
        };
        for old in evicted {
            tracing::info!(key, session = %old, "ended the key's oldest session: it holds {} sessions, the most one key may", self.max_per_key);
            let sessions = self.clone();
            tokio::spawn(async move {
                if let Err(e) = sessions.inner.close_session(&old).await {
                    tracing::warn!(session = %old, "cannot end a session: {e}");
                }
            });
        }
    }

    #[cfg(test)]
    fn count(&self) -> usize {
        self.owners().by_id.len()
    }
}

impl SessionManager for KeyedSessions {
    type Error = LocalSessionManagerError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        self.inner.create_session().await
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.inner.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.inner.has_session(id).await
    }

    /// By `DELETE`, and by rmcp when a session's worker ended (it expired): the owner goes too.
    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        {
            let mut owners = self.owners();
            owners.forget(id);
            self.metrics.set_sessions_open(owners.by_id.len());
        }
        self.inner.close_session(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.create_stream(id, message).await
    }

    async fn accept_message(&self, id: &SessionId, message: ClientJsonRpcMessage) -> Result<(), Self::Error> {
        self.inner.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.create_standalone_stream(id).await
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.resume(id, last_event_id).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_key_past_its_cap_loses_its_oldest_session_and_other_keys_keep_theirs() {
        let sessions =
            Arc::new(KeyedSessions::new(2, Duration::from_secs(300), Arc::new(Metrics::default())));
        sessions.bind("a1", "alice");
        sessions.bind("b1", "bob");
        sessions.bind("a2", "alice");
        sessions.bind("a3", "alice");
        assert_eq!(sessions.owner("a1"), None, "alice's oldest ended");
        assert_eq!(sessions.owner("a2").as_deref(), Some("alice"));
        assert_eq!(sessions.owner("a3").as_deref(), Some("alice"));
        assert_eq!(sessions.owner("b1").as_deref(), Some("bob"));
        assert_eq!(sessions.count(), 3);
        sessions.close_session(&SessionId::from("a2")).await.unwrap();
        assert_eq!(sessions.owner("a2"), None);
        assert_eq!(sessions.count(), 2);
    }
}
