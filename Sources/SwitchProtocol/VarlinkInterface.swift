import Glibc

/// The varlink interfaces the daemon serves (PROTOCOL.md "varlink"): its
/// own, whose definition is the repository's one file
/// `io.switchd.Switches.varlink`, embedded at build time (Package.swift,
/// `.embedInCode`) so that what is served is what is shipped; and
/// `org.varlink.service`, which every varlink service implements.
public enum VarlinkInterface {
  public static let name = "io.switchd.Switches"
  public static let service = "org.varlink.service"

  /// The text of `io.switchd.Switches.varlink`.
  public static let description = String(
    decoding: PackageResources.io_switchd_Switches_varlink, as: UTF8.self)

  /// varlink.org's definition of the service interface, as every
  /// implementation serves it.
  public static let serviceDescription = """
    # The Varlink Service Interface is provided by every varlink service. It
    # describes the service and the interfaces it implements.
    interface org.varlink.service

    # Get a list of all the interfaces a service provides and information
    # about the implementation.
    method GetInfo() -> (
      vendor: string,
      product: string,
      version: string,
      url: string,
      interfaces: []string
    )

    # Get the description of an interface that is implemented by this service.
    method GetInterfaceDescription(interface: string) -> (description: string)

    # The requested interface was not found.
    error InterfaceNotFound (interface: string)

    # The requested method was not found
    error MethodNotFound (method: string)

    # The interface defines the requested method, but the service does not
    # implement it.
    error MethodNotImplemented (method: string)

    # One of the passed parameters is invalid.
    error InvalidParameter (parameter: string)

    # Client is denied access
    error PermissionDenied ()

    # Method is expected to be called with 'more' set to true, but wasn't
    error ExpectedMore ()

    """

  /// The definition of `interface`, if this service implements it.
  public static func description(of interface: String) -> String? {
    switch interface {
    case name: return description
    case service: return serviceDescription
    default: return nil
    }
  }

  /// The varlink method name of a JSON-RPC method (`toggle` → `Toggle`);
  /// nil for the ones varlink does not have: `unwatch` (a watch ends with
  /// its connection) and `backup` (it passes a descriptor).
  public static func methodName(_ method: Method) -> String? {
    switch method {
    case .unwatch, .backup: return nil
    default: return method.rawValue.prefix(1).uppercased() + method.rawValue.dropFirst()
    }
  }

  /// The JSON-RPC method a varlink method name of this interface stands for.
  public static func method(named name: String) -> Method? {
    var name = name
    return name.withUTF8 { method(named: $0) }
  }

  /// The same from the name's bytes: the JSON-RPC name with its first
  /// letter capitalized (`methodName`), looked up without a String made.
  static func method(named name: UnsafeBufferPointer<UInt8>) -> Method? {
    guard let first = name.first, first >= UInt8(ascii: "A"), first <= UInt8(ascii: "Z") else {
      return nil
    }
    return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: name.count) { lower in
      _ = lower.initialize(fromContentsOf: name)
      lower[0] = first + (UInt8(ascii: "a") - UInt8(ascii: "A"))
      guard let method = Method.named(bytes: UnsafeBufferPointer(lower)), methodName(method) != nil
      else { return nil }
      return method
    }
  }

  /// The method a varlink call's full name (`io.switchd.Switches.Get`)
  /// stands for, from its bytes; nil for another interface's or none.
  static func method(fullName: UnsafeBufferPointer<UInt8>) -> Method? {
    var interface = name
    return interface.withUTF8 { prefix in
      guard fullName.count > prefix.count + 1, fullName[prefix.count] == UInt8(ascii: "."),
        memcmp(fullName.baseAddress!, prefix.baseAddress!, prefix.count) == 0
      else { return nil }
      return method(named: UnsafeBufferPointer(rebasing: fullName[(prefix.count + 1)...]))
    }
  }
}
