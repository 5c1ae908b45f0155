import NIOCore
import PostgresNIO

/// A one-dimensional PostgreSQL array whose elements may be NULL, bound as one parameter (the
/// binary array format): `INSERT … SELECT … FROM UNNEST($1::text[], $2::float8[], …)` writes many
/// rows in one statement with one bind per column. PostgresNIO's own `Array` encoding has no
/// NULL elements.
struct PostgresNullableArray<Element: PostgresArrayEncodable & PostgresNonThrowingEncodable>: PostgresNonThrowingEncodable {
    var elements: [Element?]

    init(_ elements: [Element?]) { self.elements = elements }

    static var psqlType: PostgresDataType { Element.psqlArrayType }
    static var psqlFormat: PostgresFormat { .binary }

    func encode<JSONEncoder: PostgresJSONEncoder>(into buffer: inout ByteBuffer, context: PostgresEncodingContext<JSONEncoder>) {
        // Dimensions (0 for an empty array), whether any element is NULL, the element type.
        buffer.writeInteger(elements.isEmpty ? 0 : 1, as: Int32.self)
        buffer.writeInteger(elements.contains { $0 == nil } ? 1 : 0, as: Int32.self)
        buffer.writeInteger(Element.psqlType.rawValue)
        guard !elements.isEmpty else { return }
        // The one dimension: its length and lower bound.
        buffer.writeInteger(Int32(elements.count))
        buffer.writeInteger(1, as: Int32.self)
        for element in elements {
            guard let element else {
                buffer.writeInteger(-1, as: Int32.self)
                continue
            }
            let lengthIndex = buffer.writerIndex
            buffer.writeInteger(0, as: Int32.self)
            let start = buffer.writerIndex
            element.encode(into: &buffer, context: context)
            buffer.setInteger(Int32(buffer.writerIndex - start), at: lengthIndex)
        }
    }
}

/// Builds a ``PostgresQuery`` from pieces: fixed SQL text (written in this module, never a
/// value) and bound values. Every value goes through a bind.
struct PostgresQueryBuilder {
    private var interpolation = PostgresQuery.StringInterpolation(literalCapacity: 256, interpolationCount: 16)

    /// SQL text written here (column lists, placeholders' casts), never data.
    mutating func sql(_ text: StaticString) { interpolation.appendLiteral(text.description) }
    /// A column or table name from a fixed list in this module (``PurchaseField/audited``).
    mutating func identifier(_ name: String) {
        precondition(name.utf8.allSatisfy { ($0 >= 0x61 && $0 <= 0x7A) || $0 == 0x5F }, "not an identifier: \(name)")
        interpolation.appendLiteral(name)
    }
    mutating func bind<Value: PostgresDynamicTypeEncodable>(_ value: Value) { interpolation.appendInterpolation(value) }
    mutating func bind<Value: PostgresDynamicTypeEncodable>(_ value: Value?) { interpolation.appendInterpolation(value) }

    var query: PostgresQuery { PostgresQuery(stringInterpolation: interpolation) }
}
