import SwitchCore

extension WireEncoding {
  /// The fixed parts of the objects, made once from `WireField`'s names:
  /// appending bytes costs what a literal would on the paths that run for
  /// every change and request.
  enum Parts {
    static let defaultCheckedTrue = fixedBytes {
      $0.member(WireField.defaultChecked)
      $0.bool(true)
    }
    static let defaultCheckedFalse = fixedBytes {
      $0.member(WireField.defaultChecked)
      $0.bool(false)
    }
    static let effectiveUser = scopeMembers(effective: true, .user)
    static let ineffectiveUser = scopeMembers(effective: false, .user)
    static let effectiveSystem = scopeMembers(effective: true, .system)
    static let ineffectiveSystem = scopeMembers(effective: false, .system)
    static let revision = fixedBytes { $0.member(WireField.revision) }
    static let changedAt = fixedBytes { $0.member(WireField.changedAt) }
    /// `,"changedAt":"`, the time's opening quote joined to its name.
    static let changedAtTime = fixedBytes {
      $0.member(WireField.changedAt)
      $0.raw("\"")
    }
    static let observed = fixedBytes { $0.member(WireField.observed) }
    /// `observed` null, then `writableEnd`: how a read or write of a
    /// switch that reads nothing back ends for a caller who may write it.
    static let unobservedWritableEnd = fixedBytes {
      $0.member(WireField.observed)
      $0.null()
      $0.member(WireField.writable)
      $0.bool(true)
      $0.member(WireField.writableReason)
      $0.null()
      $0.raw("}")
    }
    static let writableEnd = fixedBytes {
      $0.member(WireField.writable)
      $0.bool(true)
      $0.member(WireField.writableReason)
      $0.null()
      $0.raw("}")
    }
    static let notWritableReason = fixedBytes {
      $0.member(WireField.writable)
      $0.bool(false)
      $0.member(WireField.writableReason)
    }
    static let end = fixedBytes { $0.raw("}") }
    /// The members between `policySource`'s value and `revision`'s: a
    /// system switch's `user` is null, a user-scope one's follows.
    static func scopeMembers(effective: Bool, _ scope: Scope) -> FixedBytes {
      fixedBytes {
        $0.member(WireField.effective)
        $0.bool(effective)
        $0.member(WireField.scope)
        $0.string(scope.wireName)
        $0.member(WireField.user)
        if scope == .system {
          $0.null()
          $0.member(WireField.revision)
        }
      }
    }

    static let checked = fixedBytes { $0.firstMember(WireField.checked) }
    // The hold members of a held switch, for each change of one.
    static let readOnly = fixedBytes { $0.member(WireField.readOnly) }
    static let readOnlyReason = fixedBytes { $0.member(WireField.readOnlyReason) }
    static let heldBy = fixedBytes { $0.member(WireField.heldBy) }
    static let disabled = fixedBytes { $0.member(WireField.disabled) }
    static let disabledReason = fixedBytes { $0.member(WireField.disabledReason) }
    static let disabledBy = fixedBytes { $0.member(WireField.disabledBy) }
    static let invalid = fixedBytes { $0.member(WireField.invalid) }
    static let invalidReason = fixedBytes { $0.member(WireField.invalidReason) }
    static let pendingUntil = fixedBytes { $0.member(WireField.pendingUntil) }
    static let expiresAt = fixedBytes { $0.member(WireField.expiresAt) }
    static let readOnlyUntil = fixedBytes { $0.member(WireField.readOnlyUntil) }
    static let disabledUntil = fixedBytes { $0.member(WireField.disabledUntil) }
    /// Most switches are held by nobody: one copy instead of sixteen appends.
    static let freeHold = fixedBytes { writeHoldMembersInFull(&$0, SwitchState(checked: false)) }
    /// `defaultChecked` and a free switch's hold members, one append.
    static let defaultTrueFreeHold = fixedBytes {
      $0.raw(defaultCheckedTrue)
      $0.raw(freeHold)
    }
    static let defaultFalseFreeHold = fixedBytes {
      $0.raw(defaultCheckedFalse)
      $0.raw(freeHold)
    }

    static let uid = fixedBytes { $0.firstMember(WireField.uid) }
    static let gid = fixedBytes { $0.member(WireField.gid) }
    static let pid = fixedBytes { $0.member(WireField.pid) }
    static let hiddenActor = idlessActor(source: nil)
    static let policyActor = idlessActor(source: Actor.policy.source)
    static let reconcileActor = idlessActor(source: Actor.reconcile.source)
    static let systemActor = idlessActor(source: Actor.system.source)
    static let timerActor = idlessActor(source: Actor.timer.source)
    static func idlessActor(source: String?) -> FixedBytes {
      fixedBytes {
        $0.firstMember(WireField.uid)
        $0.null()
        $0.member(WireField.gid)
        $0.null()
        $0.member(WireField.pid)
        $0.null()
        if let source {
          $0.member(WireField.source)
          $0.string(source)
        }
        $0.raw("}")
      }
    }

    // The members of each change, encoded once or twice per change.
    static let changeRevision = fixedBytes { $0.name(WireField.revision) }
    static let time = fixedBytes { $0.member(WireField.time) }
    static let key = fixedBytes { $0.member(WireField.key) }
    static let user = fixedBytes { $0.member(WireField.user) }
    static let cause = fixedBytes { $0.member(WireField.cause) }
    static let fields = fixedBytes {
      $0.member(WireField.fields)
      $0.raw("[")
    }
    static let actor = fixedBytes {
      $0.raw("]")
      $0.member(WireField.actor)
    }
    static let state = fixedBytes { $0.member(WireField.state) }
    static let previous = fixedBytes { $0.member(WireField.previous) }

    // A template's names (`SwitchTemplate`), made for each switch first read,
    // each joined to the quotes of the strings around it: a string member
    // is one append of its escaped bytes between two of these (the quotes
    // apart cost two appends more a string, ~0.4k of an object written
    // from its definition; callgrind).
    /// `{"key":"`
    static let templateKey = fixedBytes {
      $0.firstMember(WireField.key)
      $0.raw("\"")
    }
    /// `","label":"`
    static let templateLabel = closing(WireField.label, then: "\"")
    /// `","description":"`
    static let templateDescription = closing(WireField.description, then: "\"")
    /// `","checked":true`
    static let templateChecked = closing(WireField.checked, then: "true")
    static let templateUnchecked = closing(WireField.checked, then: "false")
    /// `,"checkedIcon":"`
    static let templateCheckedIcon = fixedBytes {
      $0.member(WireField.checkedIcon)
      $0.raw("\"")
    }
    /// `","uncheckedIcon":"`
    static let templateUncheckedIcon = closing(WireField.uncheckedIcon, then: "\"")
    /// `","group":"`
    static let templateGroup = closing(WireField.group, then: "\"")
    /// `","order":`
    static let templateOrder = closing(WireField.order, then: "")
    /// A string's closing quote, the member `name`, then `next`: a value,
    /// or the opening quote of its string.
    static func closing(_ name: String, then next: StaticString) -> FixedBytes {
      fixedBytes {
        $0.raw("\"")
        $0.member(name)
        $0.raw(next)
      }
    }
    static let templatePolicySource = fixedBytes { $0.member(WireField.policySource) }
  }
}
