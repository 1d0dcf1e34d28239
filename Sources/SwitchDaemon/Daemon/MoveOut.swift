extension Array {
  /// The element at `index`, moved out of the array: `placeholder` (a
  /// case without payload) takes its place. Reading `self[index]` copies
  /// the element, a retain for each reference in it, and the array releases
  /// its own copy later; `reverse()` then `popLast()` copied each element
  /// through its value witnesses too (~500 instructions a writer job,
  /// callgrind). A swap moves the bytes and touches no count.
  mutating func moveOut(at index: Int, leaving placeholder: Element) -> Element {
    var taken = placeholder
    swap(&taken, &self[index])
    return taken
  }

  /// Empties an array kept for the next use (a group's, a drain's): its
  /// buffer stays unless it grew past `keptElements`, so that a burst (a
  /// reload's thousands of changes, a start's due expiries) is not held
  /// for good.
  mutating func empty() {
    if capacity > keptElements {
      self = []
    } else {
      removeAll(keepingCapacity: true)
    }
  }
}

/// The most elements an array kept from one group or drain to the next
/// keeps room for (`Array.empty()`).
let keptElements = 256
