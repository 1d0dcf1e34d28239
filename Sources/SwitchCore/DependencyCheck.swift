/// One `Requires=` or `Conflicts=` line of switches.d.
struct DependencyListing {
  /// The switch whose section holds the line.
  var key: String
  /// `Requires` or `Conflicts`.
  var name: String
  var keys: [String]
  var location: SourceLocation
  /// The index of its file in the report's order.
  var file: Int
}

/// What `Requires=` and `Conflicts=` may not say (CONFIG.md, SEMANTICS.md
/// rule 17): a key no switch has, a user-scope switch on either side, the
/// switch itself, a key listed twice, and a cycle through either kind.
enum DependencyCheck {
  struct Problem {
    var location: SourceLocation
    var message: String
    var file: Int
  }

  static func problems(
    _ listings: [DependencyListing], definitions: [SwitchDefinition], declared: Set<String>
  ) -> [Problem] {
    var problems: [Problem] = []
    var scopes: [String: Scope] = [:]
    for definition in definitions { scopes[definition.key] = definition.scope }
    // The edges that are otherwise valid, with the line that makes each, for the cycle search.
    var edges: [String: [(to: String, listing: DependencyListing)]] = [:]
    var listedBy: [String: [String: String]] = [:]
    for listing in listings {
      func problem(_ message: String) {
        problems.append(Problem(location: listing.location, message: message, file: listing.file))
      }
      if scopes[listing.key] == .user && !listing.keys.isEmpty {
        problem(
          "\(listing.name)= on \(listing.key), a user-scope switch: dependencies are between "
            + "system switches")
        continue
      }
      for other in listing.keys {
        if other == listing.key {
          problem("\(listing.name)=\(other): switch \(other) cannot depend on itself")
        } else if !declared.contains(other) {
          problem("\(listing.name)=\(other): no switch has the key \(other)")
        } else if scopes[other] == .user {
          problem(
            "\(listing.name)=\(other): \(other) is a user-scope switch; dependencies are between "
              + "system switches")
        } else if let earlier = listedBy[listing.key]?[other] {
          let what = earlier == listing.name ? "twice" : "in both \(earlier)= and \(listing.name)="
          problem("\(listing.name)=\(other): \(listing.key) lists \(other) \(what)")
        } else {
          listedBy[listing.key, default: [:]][other] = listing.name
          edges[listing.key, default: []].append((other, listing))
        }
      }
    }
    for cycle in cycles(edges, in: definitions.map(\.key)) {
      let first = cycle[0].listing
      let path = (cycle.map(\.listing.key) + [first.key]).joined(separator: " -> ")
      problems.append(
        Problem(
          location: first.location,
          message: "Requires=/Conflicts= make a cycle: \(path); a switch cannot depend on itself",
          file: first.file))
    }
    return problems
  }

  /// The cycles a depth-first search meets, each as its edges from the
  /// switch where it was entered: one for each edge that closes one, so
  /// at most one per listed dependency (not every cycle of a dense graph,
  /// which could be exponentially many), and two cycles through one
  /// switch are both named (only the first was, and the second once that
  /// was mended). A loop, not recursion, so that a long chain cannot
  /// exhaust the stack.
  private static func cycles(
    _ edges: [String: [(to: String, listing: DependencyListing)]], in order: [String]
  ) -> [[(to: String, listing: DependencyListing)]] {
    enum Mark { case visiting, done }
    var marks: [String: Mark] = [:]
    var found: [[(to: String, listing: DependencyListing)]] = []
    for root in order where marks[root] == nil {
      // The switches being visited, each with the index of its next edge;
      // `path` holds the edges taken to reach the top one.
      var stack: [(key: String, next: Int)] = [(root, 0)]
      var path: [(to: String, listing: DependencyListing)] = []
      marks[root] = .visiting
      while let top = stack.last {
        let out = edges[top.key] ?? []
        guard top.next < out.count else {
          marks[top.key] = .done
          stack.removeLast()
          if !path.isEmpty { path.removeLast() }
          continue
        }
        stack[stack.count - 1].next += 1
        let edge = out[top.next]
        switch marks[edge.to] {
        case nil:
          marks[edge.to] = .visiting
          path.append(edge)
          stack.append((edge.to, 0))
        case .visiting:
          found.append(Array(path.drop { $0.listing.key != edge.to }) + [edge])
        case .done: break
        }
      }
    }
    return found
  }
}

extension CatalogBuilder {
  /// The keys of a `Requires=`/`Conflicts=` value: separated by spaces or tabs.
  static func dependencyKeys(_ value: String) -> [String] {
    value.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
  }
}
