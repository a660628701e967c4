//! Per-key limits kept in the database: two stores over one PostgreSQL database stand for two
//! servers behind a balancer, and together give a key its rate and its calls at once, not
//! twice them. A SQLite store has none (each server keeps its own in memory).

use cortex_domain::api_key::Rate;
use cortex_store::{Admission, SharedLimits};
use cortex_testdb::TestDb;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn two_servers(db: &TestDb) -> [Arc<dyn SharedLimits>; 2] {
    [db.open(), db.open()].map(|store| store.shared_limits().expect("PostgreSQL shares its limits"))
}

const LONG: Duration = Duration::from_secs(60);

#[test]
fn postgres_two_servers_give_a_key_one_burst_then_refuse_with_the_wait() {
    let db = TestDb::postgres();
    let servers = two_servers(&db);
    let rate = Rate { per_second: 10.0 };
    let started = Instant::now();
    let mut admitted = 0;
    let mut waits = Vec::new();
    for i in 0..30 {
        match servers[i % 2].take_request("ana", rate).unwrap() {
            Admission::Admitted { .. } => admitted += 1,
            Admission::RateLimited { wait } => waits.push(wait),
            Admission::TooManyCalls => panic!("a request is not a call"),
        }
    }
    // One second's worth, plus what refilled while the statements ran, however long that took.
    let refill = (started.elapsed().as_secs_f64() * rate.per_second).ceil() as usize;
    assert!(
        admitted >= 10 && admitted <= 10 + refill,
        "admitted {admitted} of 30 at 10/s, {refill} refilled"
    );
    assert!(waits.iter().all(|w| *w <= Duration::from_millis(100)), "{waits:?}");
    // Another key has its own bucket.
    assert!(matches!(servers[1].take_request("ben", rate).unwrap(), Admission::Admitted { .. }));
    std::thread::sleep(Duration::from_millis(300));
    let refilled = (0..20)
        .filter(|_| matches!(servers[0].take_request("ana", rate).unwrap(), Admission::Admitted { .. }))
        .count();
    assert!((3..=10 + 1).contains(&refilled), "at least 0.3 s refilled {refilled} at 10/s, at most a burst");
}

#[test]
fn postgres_two_servers_share_a_keys_calls_at_once_and_leases_free_themselves() {
    let db = TestDb::postgres();
    let servers = two_servers(&db);
    let rate = Rate { per_second: 1000.0 };
    let Admission::Admitted { lease: first } = servers[0].start_call("ana", rate, 2, LONG).unwrap() else {
        panic!("the first call is admitted")
    };
    let Admission::Admitted { lease: second } = servers[1].start_call("ana", rate, 2, LONG).unwrap() else {
        panic!("the second call is admitted")
    };
    assert_eq!(servers[0].start_call("ana", rate, 2, LONG).unwrap(), Admission::TooManyCalls);
    assert_eq!(servers[1].start_call("ana", rate, 2, LONG).unwrap(), Admission::TooManyCalls);
    assert!(matches!(servers[1].start_call("ben", rate, 2, LONG).unwrap(), Admission::Admitted { .. }));
    // Ended on the other server than the one that started it: the place is the key's.
    servers[1].end_call("ana", first).unwrap();
    assert!(matches!(servers[0].start_call("ana", rate, 2, LONG).unwrap(), Admission::Admitted { .. }));
    servers[0].end_call("ana", second).unwrap();
    // A call whose server died is never ended: its place frees itself when its lease ends.
    let short = Duration::from_secs(2);
    assert!(matches!(servers[0].start_call("cy", rate, 1, short).unwrap(), Admission::Admitted { .. }));
    assert_eq!(servers[1].start_call("cy", rate, 1, short).unwrap(), Admission::TooManyCalls);
    std::thread::sleep(short + Duration::from_millis(200));
    assert!(matches!(servers[1].start_call("cy", rate, 1, short).unwrap(), Admission::Admitted { .. }));
}

#[test]
fn postgres_a_call_over_the_rate_is_refused_with_the_wait_and_takes_no_place() {
    let db = TestDb::postgres();
    let [server, _] = two_servers(&db);
    let rate = Rate { per_second: 1.0 };
    assert!(matches!(server.start_call("ana", rate, 5, LONG).unwrap(), Admission::Admitted { .. }));
    let Admission::RateLimited { wait } = server.start_call("ana", rate, 5, LONG).unwrap() else {
        panic!("the second call within a second is over a 1/s rate")
    };
    assert!(wait <= Duration::from_secs(1), "{wait:?}");
}

#[test]
fn sqlite_keeps_no_shared_limits() {
    assert!(TestDb::sqlite().open().shared_limits().is_none());
}
