// policy.d: what the organisation holds, merged name by name.
extension CatalogBuilder {
  static let policyNames = ["ReadOnly", "Disabled", "Checked", "Reason", "Schedule"]

  /// A policy being merged, with what the later warnings need to point at.
  struct PolicyDraft {
    var rule: PolicyRule
    /// Where the key's first policy section is, for the undeclared-key warning.
    var firstSection: SourceLocation
    var firstSectionFile: Int
    /// The `Checked=` line in force.
    var checkedAt: (location: SourceLocation, file: Int)?
    /// The `ReadOnly=` line in force, whatever its value.
    var readOnlyAt: SourceLocation?
    /// The `Schedule=` line in force.
    var scheduleAt: (location: SourceLocation, file: Int)?
  }

  /// Merges policy files name by name, in order, as systemd drop-ins do
  /// (within one file a repeat is an error: `reportRepeats`).
  struct PolicyReader {
    private var drafts: [String: PolicyDraft] = [:]
    private var order: [String] = []

    mutating func read(_ bytes: [UInt8], file: String, into report: inout Report) {
      let (keyFile, syntax) = KeyFile.parse(bytes: bytes, file: file)
      report.add(syntax)
      CatalogBuilder.reportRepeats(keyFile, sections: true, into: &report)
      for section in keyFile.sections {
        let header = SourceLocation(file: file, line: section.line)
        let key = section.name
        // A bad key is still read (into a throw-away draft) so that its
        // entries are checked too.
        let keyProblem = SwitchKey.problem(key)
        if let keyProblem {
          report.error(header, "invalid switch key \"\(key)\": \(keyProblem)")
        }
        var draft =
          drafts[key]
          ?? PolicyDraft(
            rule: PolicyRule(key: key), firstSection: header, firstSectionFile: report.file)
        for entry in section.entries {
          let location = SourceLocation(file: file, line: entry.line)
          switch entry.name {
          case "ReadOnly", "Disabled":
            guard let value = BooleanWord.parse(entry.value) else {
              report.error(location, notBoolean(entry))
              continue
            }
            if entry.name == "ReadOnly" {
              draft.rule.readOnly = value
              draft.rule.readOnlySource = header
              draft.readOnlyAt = location
            } else {
              draft.rule.disabled = value
              draft.rule.disabledSource = header
            }
          case "Checked":
            // Empty clears an earlier file's Checked=: it is the only way a
            // drop-in can say "fix no value".
            if entry.value.isEmpty {
              draft.rule.checked = nil
              draft.checkedAt = nil
            } else if let value = BooleanWord.parse(entry.value) {
              draft.rule.checked = value
              draft.checkedAt = (location, report.file)
            } else {
              report.error(location, notBoolean(entry))
            }
          case "Reason":
            draft.rule.reason = entry.value.isEmpty ? nil : entry.value
          case "Schedule":
            // Empty clears an earlier file's Schedule=, as for Checked=.
            if entry.value.isEmpty {
              draft.rule.schedule = nil
              draft.scheduleAt = nil
            } else {
              do {
                draft.rule.schedule = try Schedule(parsing: entry.value)
                draft.scheduleAt = (location, report.file)
              } catch {
                report.error(location, "invalid Schedule=: \(error.message)")
              }
            }
          default:
            report.error(location, unknownName(entry, section: key, allowed: policyNames))
          }
        }
        if keyProblem != nil { continue }
        if drafts[key] == nil { order.append(key) }
        drafts[key] = draft
      }
    }

    /// The merged rules; warns about what has no effect.
    func finish(declared: Set<String>, into report: inout Report) -> [PolicyRule] {
      var rules: [PolicyRule] = []
      for key in order {
        guard var draft = drafts[key] else { continue }
        // A source names the section that holds or disables; nothing is held
        // by a section that says no.
        if !draft.rule.readOnly { draft.rule.readOnlySource = nil }
        if !draft.rule.disabled { draft.rule.disabledSource = nil }
        if !declared.contains(key) {
          report.warning(
            draft.firstSection, "policy for undeclared switch \(key): ignored on this machine",
            file: draft.firstSectionFile)
        }
        if let checkedAt = draft.checkedAt, !draft.rule.readOnly {
          var message = "Checked= has no effect without ReadOnly=yes"
          if let lifted = draft.readOnlyAt { message += " (ReadOnly=no at \(lifted))" }
          report.warning(checkedAt.location, message, file: checkedAt.file)
        }
        // Like Checked=: a schedule on a section that holds nothing is
        // most likely a drop-in that lifted the hold and forgot the times.
        if let scheduleAt = draft.scheduleAt, !draft.rule.readOnly, !draft.rule.disabled {
          report.warning(
            scheduleAt.location, "Schedule= has no effect without ReadOnly=yes or Disabled=yes",
            file: scheduleAt.file)
        }
        rules.append(draft.rule)
      }
      return rules
    }
  }
}
