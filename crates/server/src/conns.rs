//! The connections the server holds: how many in all and from each client address, which of
//! them are waiting for a request (no call running: a TLS handshake, headers still arriving,
//! or an idle keep-alive), and when a waiting one has waited too long. At a cap, the oldest
//! waiting connection (of that address, or of all) is closed to make room: a timeout alone
//! lets a flood of slow sockets fill every descriptor until it strikes, and keeps a real
//! request out meanwhile. Only when every connection has a call running is a new one refused.
//!
//! Times are milliseconds since the registry was made, so a connection's state is atomics.

use super::Metrics;
use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// Caps and timeouts the registry applies.
#[derive(Debug, Clone, Copy)]
pub struct Policy {
    pub max_total: usize,
    pub max_per_ip: usize,
    pub header_timeout: Duration,
    pub idle_timeout: Duration,
}

/// What a connection holds, as its task and the registry see it.
pub struct Conn {
    id: u64,
    ip: IpAddr,
    epoch: Instant,
    /// Requests being answered (until their answer has been sent).
    active: AtomicUsize,
    /// Since when it waits for a request: its opening, or its last answer's end.
    waiting_since: AtomicU64,
    /// Whether an answer was ever sent on it (then waiting without bytes is idling).
    answered: AtomicBool,
    /// When the first byte of the next request came, while waiting (0: none yet).
    first_byte_at: AtomicU64,
    /// Cancelled when the registry sheds it: its task drops the socket.
    pub shed: CancellationToken,
}

impl Conn {
    fn now(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }

    fn is_waiting(&self) -> bool {
        self.active.load(Ordering::Acquire) == 0
    }

    /// Bytes arrived from the client.
    pub fn on_read(&self) {
        if self.is_waiting() && self.first_byte_at.load(Ordering::Relaxed) == 0 {
            self.first_byte_at.store(self.now().max(1), Ordering::Relaxed);
        }
    }

    /// A request's headers were read: it is being answered.
    pub fn begin(&self) {
        self.active.fetch_add(1, Ordering::AcqRel);
    }

    /// A request's answer was sent (or abandoned).
    pub fn end(&self) {
        if self.active.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.waiting_since.store(self.now(), Ordering::Relaxed);
            self.first_byte_at.store(0, Ordering::Relaxed);
            self.answered.store(true, Ordering::Relaxed);
        }
    }

    /// Whether it has waited past its timeout: headers (or a handshake) not finished in
    /// `header_timeout` since their first byte, or since the opening; no next request within
    /// `idle_timeout` of the last answer.
    pub fn overdue(&self, policy: &Policy) -> bool {
        if !self.is_waiting() {
            return false;
        }
        let now = self.now();
        let first_byte = self.first_byte_at.load(Ordering::Relaxed);
        let (since, limit) = if first_byte != 0 {
            (first_byte, policy.header_timeout)
        } else if self.answered.load(Ordering::Relaxed) {
            (self.waiting_since.load(Ordering::Relaxed), policy.idle_timeout)
        } else {
            (self.waiting_since.load(Ordering::Relaxed), policy.header_timeout)
        };
        now.saturating_sub(since) > limit.as_millis() as u64
    }
}

/// A new connection found no room: every connection it could displace has a call running.
#[derive(Debug, PartialEq, Eq)]
pub enum Full {
    Address,
    Server,
}

#[derive(Default)]
struct Open {
    next_id: u64,
    /// By id, which is by age.
    conns: BTreeMap<u64, Arc<Conn>>,
    per_ip: HashMap<IpAddr, usize>,
}

impl Open {
    fn remove(&mut self, id: u64) -> Option<Arc<Conn>> {
        let conn = self.conns.remove(&id)?;
        if let Some(n) = self.per_ip.get_mut(&conn.ip) {
            *n -= 1;
            if *n == 0 {
                self.per_ip.remove(&conn.ip);
            }
        }
        Some(conn)
    }

    /// Closes the oldest waiting connection (of `ip` if given); false when there is none.
    fn shed_oldest(&mut self, ip: Option<IpAddr>) -> bool {
        let victim =
            self.conns.values().find(|c| c.is_waiting() && ip.is_none_or(|ip| c.ip == ip)).map(|c| c.id);
        match victim.and_then(|id| self.remove(id)) {
            Some(conn) => {
                conn.shed.cancel();
                true
            }
            None => false,
        }
    }
}

pub struct Connections {
    policy: Policy,
    epoch: Instant,
    open: Mutex<Open>,
    metrics: Arc<Metrics>,
    /// Connections shed whose task has not closed the socket yet: each still holds a descriptor.
    closing: AtomicUsize,
}

impl Connections {
    pub fn new(policy: Policy, metrics: Arc<Metrics>) -> Connections {
        Connections {
            policy,
            epoch: Instant::now(),
            open: Mutex::default(),
            metrics,
            closing: AtomicUsize::new(0),
        }
    }

    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Open> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Room for a connection from `ip`, shedding the oldest waiting one at a cap.
    pub fn admit(self: &Arc<Self>, ip: IpAddr) -> Result<Registered, Full> {
        let mut open = self.lock();
        if open.per_ip.get(&ip).copied().unwrap_or(0) >= self.policy.max_per_ip {
            if !open.shed_oldest(Some(ip)) {
                self.metrics.connection_closed("full");
                return Err(Full::Address);
            }
            self.on_shed();
        }
        if open.conns.len() >= self.policy.max_total {
            if !open.shed_oldest(None) {
                self.metrics.connection_closed("full");
                return Err(Full::Server);
            }
            self.on_shed();
        }
        let id = open.next_id;
        open.next_id += 1;
        let conn = Arc::new(Conn {
            id,
            ip,
            epoch: self.epoch,
            active: AtomicUsize::new(0),
            waiting_since: AtomicU64::new(self.epoch.elapsed().as_millis() as u64),
            answered: AtomicBool::new(false),
            first_byte_at: AtomicU64::new(0),
            shed: CancellationToken::new(),
        });
        open.conns.insert(id, conn.clone());
        *open.per_ip.entry(ip).or_default() += 1;
        self.metrics.set_connections_open(open.conns.len());
        Ok(Registered { conn, registry: self.clone() })
    }

    /// Out of descriptors anyway (files the store opened, say): close the oldest waiting
    /// connection so the next accept can succeed.
    pub fn shed_one(&self) -> bool {
        let shed = self.lock().shed_oldest(None);
        if shed {
            self.on_shed();
        }
        shed
    }

    fn on_shed(&self) {
        self.closing.fetch_add(1, Ordering::AcqRel);
        self.metrics.connection_closed("shed");
    }

    /// Sockets shed but not closed yet: the accept loop waits while there are many, or a
    /// burst of new connections would run out of descriptors before the shed ones are freed.
    pub fn closing(&self) -> usize {
        self.closing.load(Ordering::Acquire)
    }

    pub fn open(&self) -> usize {
        self.lock().conns.len()
    }
}

/// A connection's place in the registry, given back when dropped.
pub struct Registered {
    pub conn: Arc<Conn>,
    registry: Arc<Connections>,
}

impl Registered {
    pub fn policy(&self) -> &Policy {
        self.registry.policy()
    }

    pub fn metrics(&self) -> &Metrics {
        &self.registry.metrics
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        let mut open = self.registry.lock();
        open.remove(self.conn.id);
        self.registry.metrics.set_connections_open(open.conns.len());
        if self.conn.shed.is_cancelled() {
            self.registry.closing.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// The cap on connections the descriptor limit allows: a share of the descriptors stays for
/// the database, the index, the model and the process itself.
pub fn cap_for_descriptors(setting: usize, descriptor_limit: Option<u64>) -> usize {
    let Some(limit) = descriptor_limit else { return setting };
    let reserve = (limit / 4).max(64);
    let room = limit.saturating_sub(reserve).max(16);
    setting.min(usize::try_from(room).unwrap_or(usize::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(total: usize, per_ip: usize) -> Policy {
        Policy {
            max_total: total,
            max_per_ip: per_ip,
            header_timeout: Duration::from_millis(50),
            idle_timeout: Duration::from_secs(60),
        }
    }

    const A: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 1));
    const B: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 2));

    #[test]
    fn at_the_address_cap_the_oldest_waiting_connection_of_that_address_makes_room() {
        let registry = Arc::new(Connections::new(policy(100, 2), Arc::new(Metrics::default())));
        let first = registry.admit(A).unwrap();
        let second = registry.admit(A).unwrap();
        let other = registry.admit(B).unwrap();
        first.conn.begin();
        let third = registry.admit(A).unwrap();
        assert!(second.conn.shed.is_cancelled(), "the oldest waiting one of A");
        assert!(!first.conn.shed.is_cancelled(), "a connection with a call running stays");
        assert!(!other.conn.shed.is_cancelled(), "another address is not touched");
        third.conn.begin();
        assert_eq!(registry.admit(A).err(), Some(Full::Address), "all of A's are busy");
        assert_eq!(registry.open(), 3);
        drop(second);
        assert_eq!(registry.open(), 3, "a shed connection left the registry already");
    }

    #[test]
    fn at_the_total_cap_the_oldest_waiting_connection_of_any_address_makes_room() {
        let registry = Arc::new(Connections::new(policy(2, 10), Arc::new(Metrics::default())));
        let first = registry.admit(A).unwrap();
        let _second = registry.admit(B).unwrap();
        let _third = registry.admit(B).unwrap();
        assert!(first.conn.shed.is_cancelled());
        assert_eq!(registry.closing(), 1, "shed, its socket not closed yet");
        drop(first);
        assert_eq!(registry.closing(), 0);
        assert!(registry.shed_one());
        assert_eq!(registry.open(), 1);
    }

    #[test]
    fn headers_not_finished_in_time_are_overdue_a_call_never_is() {
        let registry = Arc::new(Connections::new(policy(10, 10), Arc::new(Metrics::default())));
        let slow = registry.admit(A).unwrap();
        slow.conn.on_read();
        let busy = registry.admit(A).unwrap();
        busy.conn.begin();
        std::thread::sleep(Duration::from_millis(80));
        assert!(slow.conn.overdue(registry.policy()));
        assert!(!busy.conn.overdue(registry.policy()));
        busy.conn.end();
        assert!(!busy.conn.overdue(registry.policy()), "idle since its answer, within the idle timeout");
    }

    #[test]
    fn the_descriptor_limit_lowers_the_cap_and_leaves_a_reserve() {
        assert_eq!(cap_for_descriptors(4096, Some(512)), 384);
        assert_eq!(cap_for_descriptors(4096, Some(1_048_576)), 4096);
        assert_eq!(cap_for_descriptors(4096, None), 4096);
        assert_eq!(cap_for_descriptors(4096, Some(20)), 16);
    }
}
