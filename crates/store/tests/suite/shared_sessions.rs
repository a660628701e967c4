//! The web UI's sessions kept in the database: two stores over one PostgreSQL database stand
//! for two servers behind a balancer. A session started on one is live on the other, ended on
//! one it is gone on both, and a principal's cap holds across both. A SQLite store has none.

use cortex_store::{NewUiSession, PendingLimits, PendingSignIn, SessionLimits, SharedSessions};
use cortex_testdb::TestDb;
use std::sync::Arc;
use std::time::Duration;

fn two_servers(db: &TestDb) -> [Arc<dyn SharedSessions>; 2] {
    [db.open(), db.open()].map(|store| store.shared_sessions().expect("PostgreSQL shares the UI's sessions"))
}

const HOURS: SessionLimits =
    SessionLimits { idle: Duration::from_secs(3600), lifetime: Duration::from_secs(7200), max_per_owner: 3 };

fn new<'a>(id_hash: &'a str, owner: &'a str, sealed: Option<&'a [u8]>) -> NewUiSession<'a> {
    NewUiSession { id_hash, owner, sealed, csrf: "csrf-of-the-session" }
}

#[test]
fn postgres_a_session_started_on_one_server_is_live_on_the_other_until_ended_on_either() {
    let db = TestDb::postgres();
    let [a, b] = two_servers(&db);
    a.start_session(&new("h1", "key:ana", Some(b"sealed bytes")), HOURS).unwrap();
    a.start_session(&new("h2", "local", None), HOURS).unwrap();
    let row = b.touch_session("h1", HOURS).unwrap().expect("live on the other server");
    assert_eq!(row.owner, "key:ana");
    assert_eq!(row.sealed.as_deref(), Some(&b"sealed bytes"[..]));
    assert_eq!(row.csrf, "csrf-of-the-session");
    assert_eq!(b.touch_session("h2", HOURS).unwrap().unwrap().sealed, None, "the keyless local user");
    assert_eq!(b.touch_session("unknown", HOURS).unwrap(), None);
    b.end_session("h1").unwrap();
    assert_eq!(a.touch_session("h1", HOURS).unwrap(), None, "signed out on every server");
    assert!(a.touch_session("h2", HOURS).unwrap().is_some(), "another session stays");
}

#[test]
fn postgres_a_principal_past_its_cap_loses_its_own_oldest_session_on_every_server() {
    let db = TestDb::postgres();
    let servers = two_servers(&db);
    for i in 0..3 {
        servers[i % 2].start_session(&new(&format!("victim{i}"), "key:victim", None), HOURS).unwrap();
    }
    for i in 0..20 {
        servers[i % 2].start_session(&new(&format!("flood{i}"), "key:flooder", None), HOURS).unwrap();
        // Distinct start times, so that "oldest" means something at the database clock's grain.
        std::thread::sleep(Duration::from_millis(2));
    }
    for i in 0..3 {
        assert!(servers[1].touch_session(&format!("victim{i}"), HOURS).unwrap().is_some(), "another's stay");
    }
    let kept: Vec<usize> = (0..20)
        .filter(|i| servers[0].touch_session(&format!("flood{i}"), HOURS).unwrap().is_some())
        .collect();
    assert_eq!(kept, vec![17, 18, 19], "the flooder keeps its newest three");
}

#[test]
fn postgres_a_session_idle_too_long_is_over_on_every_server() {
    let db = TestDb::postgres();
    let [a, b] = two_servers(&db);
    let short = SessionLimits { idle: Duration::from_millis(1500), ..HOURS };
    a.start_session(&new("idle", "key:ana", None), short).unwrap();
    a.start_session(&new("used", "key:ben", None), short).unwrap();
    for _ in 0..4 {
        std::thread::sleep(Duration::from_millis(500));
        assert!(b.touch_session("used", short).unwrap().is_some(), "used within its idle time");
    }
    assert_eq!(b.touch_session("idle", short).unwrap(), None, "unused for 2 s of 1.5");
    let brief = SessionLimits { lifetime: Duration::from_millis(300), ..HOURS };
    std::thread::sleep(Duration::from_millis(400));
    assert_eq!(a.touch_session("used", brief).unwrap(), None, "past its lifetime, used or not");
}

#[test]
fn sqlite_keeps_no_shared_sessions() {
    assert!(TestDb::sqlite().open().shared_sessions().is_none());
}

const TEN_MINUTES: PendingLimits = PendingLimits { expire_after: Duration::from_secs(600), max: 3 };

fn pending<'a>(state_hash: &'a str, sealed_verifier: &'a [u8]) -> PendingSignIn<'a> {
    PendingSignIn { state_hash, sealed_verifier }
}

#[test]
fn postgres_a_sign_in_begun_on_one_server_is_finished_on_the_other_once() {
    let db = TestDb::postgres();
    let [a, b] = two_servers(&db);
    a.begin_sign_in(&pending("s1", b"sealed verifier"), TEN_MINUTES).unwrap();
    assert_eq!(b.finish_sign_in("s1", TEN_MINUTES).unwrap().as_deref(), Some(&b"sealed verifier"[..]));
    assert_eq!(a.finish_sign_in("s1", TEN_MINUTES).unwrap(), None, "a replayed callback, on either server");
    assert_eq!(b.finish_sign_in("s1", TEN_MINUTES).unwrap(), None);
    assert_eq!(b.finish_sign_in("never begun", TEN_MINUTES).unwrap(), None, "a forged state");
}

#[test]
fn postgres_a_sign_in_past_its_time_is_refused_and_anonymous_visits_hold_a_bounded_number() {
    let db = TestDb::postgres();
    let [a, b] = two_servers(&db);
    let brief = PendingLimits { expire_after: Duration::from_millis(300), ..TEN_MINUTES };
    a.begin_sign_in(&pending("late", b"v"), brief).unwrap();
    std::thread::sleep(Duration::from_millis(400));
    assert_eq!(b.finish_sign_in("late", brief).unwrap(), None, "begun 400 ms ago, kept 300");
    assert_eq!(b.finish_sign_in("late", TEN_MINUTES).unwrap(), None, "and gone once asked for");
    for i in 0..10 {
        [&a, &b][i % 2].begin_sign_in(&pending(&format!("visit{i}"), b"v"), TEN_MINUTES).unwrap();
        std::thread::sleep(Duration::from_millis(2));
    }
    let kept: Vec<usize> =
        (0..10).filter(|i| a.finish_sign_in(&format!("visit{i}"), TEN_MINUTES).unwrap().is_some()).collect();
    assert_eq!(kept, vec![7, 8, 9], "the newest three");
}
