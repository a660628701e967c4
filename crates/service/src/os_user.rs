//! The local user as the operating system knows it: the principal of the CLI's writes and of
//! the stdio server's. On Linux, the account owning this process (`/proc/self`'s owner, the
//! effective user id) named by `/etc/passwd`; an id with no name there (a directory service,
//! a container's arbitrary user) is `uid <n>`. Environment variables (`USER`) are not asked:
//! anyone can set them, the process's owner is the kernel's word.

use cortex_domain::principal::Principal;

/// The principal of whoever runs this process.
pub fn local_principal() -> Principal {
    Principal::Local { user: user_name() }
}

#[cfg(target_os = "linux")]
fn user_name() -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let uid = std::fs::metadata("/proc/self").ok()?.uid();
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
    Some(name_of(uid, &passwd).unwrap_or_else(|| format!("uid {uid}")))
}

#[cfg(not(target_os = "linux"))]
fn user_name() -> Option<String> {
    None
}

/// The account name `/etc/passwd` gives `uid` (`name:password:uid:…` per line).
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn name_of(uid: u32, passwd: &str) -> Option<String> {
    passwd.lines().find_map(|line| {
        let mut fields = line.split(':');
        let name = fields.next()?;
        let id = fields.nth(1)?.parse::<u32>().ok()?;
        (id == uid && !name.is_empty()).then(|| name.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_uid_is_named_by_its_passwd_line() {
        let passwd = "root:x:0:0:root:/root:/bin/bash\n# a comment\ndana:x:1000:1000::/home/dana:/bin/sh\n";
        assert_eq!(name_of(0, passwd).as_deref(), Some("root"));
        assert_eq!(name_of(1000, passwd).as_deref(), Some("dana"));
        assert_eq!(name_of(1001, passwd), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_process_has_a_local_principal() {
        let Principal::Local { user: Some(user) } = local_principal() else {
            panic!("a Linux process always has an owner")
        };
        assert!(!user.is_empty());
    }
}
