import AppStoreAPI
import Foundation

/// Retention Messaging's reads, one call each, in the environment named (these endpoints name
/// no customer, so `auto` cannot find one). The writes go through ``ActionSession`` with the
/// requests of `RetentionRequests.swift`.
extension AppStoreServerAPIClient {
    /// Get Image List.
    public func imageList(environment: APIEnvironment, onEvent: (@Sendable (APIClientEvent) -> Void)? = nil) async
        -> APIAnswer<GetImageListResponse>
    {
        await send(.imageList(), in: environment, as: GetImageListResponse.self, onEvent: onEvent)
    }

    /// Get Message List.
    public func messageList(environment: APIEnvironment, onEvent: (@Sendable (APIClientEvent) -> Void)? = nil) async
        -> APIAnswer<GetMessageListResponse>
    {
        await send(.messageList(), in: environment, as: GetMessageListResponse.self, onEvent: onEvent)
    }

    /// Get Default Message of a product and locale (4040020 when none is set).
    public func defaultMessage(
        productID: String, locale: String, environment: APIEnvironment, onEvent: (@Sendable (APIClientEvent) -> Void)? = nil
    ) async -> APIAnswer<DefaultConfigurationResponse> {
        do throws(APIFailure) {
            return await send(try .defaultMessage(productID: productID, locale: locale), in: environment, as: DefaultConfigurationResponse.self, onEvent: onEvent)
        } catch {
            return APIAnswer(result: .failure(error), environment: nil, records: [])
        }
    }

    /// Get Realtime URL (4040021 when none is set in the environment).
    public func realtimeURL(environment: APIEnvironment, onEvent: (@Sendable (APIClientEvent) -> Void)? = nil) async
        -> APIAnswer<RealtimeUrlResponse>
    {
        await send(.realtimeURL(), in: environment, as: RealtimeUrlResponse.self, onEvent: onEvent)
    }

    /// Initiate Performance Test (sandbox only).
    public func initiatePerformanceTest(originalTransactionID: String, onEvent: (@Sendable (APIClientEvent) -> Void)? = nil) async
        -> APIAnswer<PerformanceTestResponse>
    {
        await send(
            .initiatePerformanceTest(PerformanceTestRequest(originalTransactionId: originalTransactionID)), in: .sandbox,
            as: PerformanceTestResponse.self, onEvent: onEvent)
    }

    /// Get Performance Test Results (sandbox only).
    public func performanceTestResult(_ requestID: String, onEvent: (@Sendable (APIClientEvent) -> Void)? = nil) async
        -> APIAnswer<PerformanceTestResultResponse>
    {
        do throws(APIFailure) {
            return await send(try .performanceTestResult(requestID), in: .sandbox, as: PerformanceTestResultResponse.self, onEvent: onEvent)
        } catch {
            return APIAnswer(result: .failure(error), environment: nil, records: [])
        }
    }
}
