import Foundation

/// A JWS whose payload is `json` and whose signature is not one: what a decoder reads without a
/// trust check (a stored row's payload, whose verdict was recorded when it arrived).
public enum UnsignedJWS {
    public static func make(_ json: String) -> String {
        func part(_ text: String) -> String {
            Data(text.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
        }
        return part(#"{"alg":"ES256","x5c":[]}"#) + "." + part(json) + ".c2ln"
    }
}
