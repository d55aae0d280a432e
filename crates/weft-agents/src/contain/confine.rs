//! The Landlock ruleset an attempt runs under.
//!
//! Every file-system access Landlock knows (up to ABI 6, best effort below) is handled, so
//! anything not granted is denied: reading and executing are granted beneath `/`, every
//! access beneath the write paths. The signal scope (ABI 6) keeps the attempt from
//! signalling any process outside its own domain, weft and its supervisor's parent
//! included. `no_new_privs` is set (Landlock requires it for an unprivileged process), so
//! set-uid programs do not gain privileges inside an attempt.

use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, CompatLevel, Compatible, Ruleset, RulesetAttr, RulesetCreatedAttr,
    RulesetStatus, Scope, path_beneath_rules,
};

/// The ABI whose rights weft asks for (the kernel may offer less; see the module docs).
const ABI_WANTED: ABI = ABI::V6;

/// Whether this kernel enforces Landlock (creates a ruleset, restricts nothing).
pub fn landlock_available() -> bool {
    Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(ABI::V1))
        .and_then(|ruleset| ruleset.create())
        .is_ok()
}

/// Restricts the calling thread (and every process it starts afterwards) to reading
/// everywhere and writing only beneath `write`, and to signalling only its own domain.
/// Paths that do not exist are skipped. Fails when the kernel enforces nothing at all.
/// Other threads of the process stay unrestricted (the supervisor has only one; the
/// benchmark measures this on a thread of its own).
pub fn restrict_thread(write: &[PathBuf]) -> Result<(), String> {
    let abi = ABI_WANTED;
    let status = Ruleset::default()
        .handle_access(AccessFs::from_all(abi))
        .and_then(|ruleset| ruleset.scope(Scope::Signal))
        .and_then(|ruleset| ruleset.create())
        .and_then(|created| {
            created.add_rules(path_beneath_rules(
                [Path::new("/")],
                AccessFs::from_read(abi),
            ))
        })
        .and_then(|created| created.add_rules(path_beneath_rules(write, AccessFs::from_all(abi))))
        .and_then(|created| created.restrict_self())
        .map_err(|e| format!("cannot apply the Landlock ruleset: {e}"))?;
    if status.ruleset == RulesetStatus::NotEnforced {
        return Err("this kernel does not enforce Landlock".into());
    }
    Ok(())
}
